// Workload manifests: pod sets and the admission-relevant part of their pod templates.
#include "common/manifest/manifest.h"
#include "common/manifest/manifest_walker.h"

#include "absl/strings/str_join.h"
#include "absl/time/time.h"

namespace admitd::manifest {
namespace {

using H = Walker::Handler;

// Pod and container fields Kubernetes has that do not matter for admission.
const std::set<std::string> kIgnoredContainerFields = {
    "image", "command", "args", "env", "envFrom", "ports", "volumeMounts", "volumeDevices",
    "imagePullPolicy", "workingDir", "securityContext", "livenessProbe", "readinessProbe",
    "startupProbe", "lifecycle", "terminationMessagePath", "terminationMessagePolicy", "stdin",
    "stdinOnce", "tty", "resizePolicy"};
const std::set<std::string> kIgnoredPodFields = {
    "volumes", "restartPolicy", "serviceAccountName", "serviceAccount", "securityContext",
    "terminationGracePeriodSeconds", "activeDeadlineSeconds", "hostNetwork", "hostPID", "hostIPC",
    "dnsPolicy", "dnsConfig", "imagePullSecrets", "schedulerName", "subdomain", "hostname",
    "automountServiceAccountToken", "enableServiceLinks", "shareProcessNamespace",
    "preemptionPolicy", "runtimeClassName", "topologySpreadConstraints", "readinessGates",
    "hostAliases", "setHostnameAsFQDN", "os", "nodeName",
    "ephemeralContainers", "resourceClaims", "hostUsers"};

void Resources(Walker& w, const YAML::Node& node, const std::string& path,
               v1::ResourceRequirements* r) {
  w.Map(node, path,
        {{"requests", [&](const YAML::Node& n, const std::string& p) {
            w.StringMap(n, p, r->mutable_requests());
          }},
         {"limits", [&](const YAML::Node& n, const std::string& p) {
            w.StringMap(n, p, r->mutable_limits());
          }}},
        {"claims"});
}

void Containers(Walker& w, const YAML::Node& node, const std::string& path,
                google::protobuf::RepeatedPtrField<v1::Container>* out) {
  w.List(node, path, [&](const YAML::Node& n, const std::string& p) {
    v1::Container* c = out->Add();
    w.Map(n, p,
          {{"name", [&](const YAML::Node& x, const std::string& xp) { c->set_name(w.Str(x, xp)); }},
           {"resources", [&](const YAML::Node& x, const std::string& xp) {
              Resources(w, x, xp, c->mutable_resources());
            }},
           {"restartPolicy", [&](const YAML::Node& x, const std::string& xp) {
              c->set_restart_policy(w.Str(x, xp));
            }}},
          kIgnoredContainerFields);
  });
}

void NodeAffinity(Walker& w, const YAML::Node& node, const std::string& path, v1::PodSpec* pod) {
  w.Map(node, path,
        {{"nodeAffinity", [&](const YAML::Node& n, const std::string& p) {
            w.Map(n, p,
                  {{"requiredDuringSchedulingIgnoredDuringExecution",
                    [&](const YAML::Node& r, const std::string& rp) {
                      w.Map(r, rp, {{"nodeSelectorTerms", [&](const YAML::Node& t, const std::string& tp) {
                                       w.List(t, tp, [&](const YAML::Node& term, const std::string& termp) {
                                         v1::NodeSelectorTerm* out = pod->add_required_node_affinity();
                                         w.Map(term, termp,
                                               {{"matchExpressions",
                                                 [&](const YAML::Node& e, const std::string& ep) {
                                                   w.List(e, ep, [&](const YAML::Node& x,
                                                                     const std::string& xp) {
                                                     v1::NodeSelectorRequirement* req =
                                                         out->add_match_expressions();
                                                     w.Map(x, xp,
                                                           {{"key", [&](const YAML::Node& y, const std::string& yp) {
                                                               req->set_key(w.Str(y, yp));
                                                             }},
                                                            {"operator", [&](const YAML::Node& y, const std::string& yp) {
                                                               req->set_operator_(w.Str(y, yp));
                                                             }},
                                                            {"values", [&](const YAML::Node& y, const std::string& yp) {
                                                               w.StringList(y, yp, req->mutable_values());
                                                             }}});
                                                   });
                                                 }}},
                                               {"matchFields"});
                                       });
                                     }}});
                    }}},
                  {"preferredDuringSchedulingIgnoredDuringExecution"});
          }}},
        {"podAffinity", "podAntiAffinity"});
}

void PodSpec(Walker& w, const YAML::Node& node, const std::string& path, v1::PodSpec* pod) {
  w.Map(node, path,
        {{"containers", [&](const YAML::Node& n, const std::string& p) {
            Containers(w, n, p, pod->mutable_containers());
          }},
         {"initContainers", [&](const YAML::Node& n, const std::string& p) {
            Containers(w, n, p, pod->mutable_init_containers());
          }},
         {"overhead", [&](const YAML::Node& n, const std::string& p) {
            w.StringMap(n, p, pod->mutable_overhead());
          }},
         {"nodeSelector", [&](const YAML::Node& n, const std::string& p) {
            w.StringMap(n, p, pod->mutable_node_selector());
          }},
         {"affinity", [&](const YAML::Node& n, const std::string& p) { NodeAffinity(w, n, p, pod); }},
         {"tolerations", [&](const YAML::Node& n, const std::string& p) {
            w.List(n, p, [&](const YAML::Node& tn, const std::string& tp) {
              v1::Toleration* t = pod->add_tolerations();
              w.Map(tn, tp,
                    {{"key", [&](const YAML::Node& v, const std::string& q) { t->set_key(w.Str(v, q)); }},
                     {"operator", [&](const YAML::Node& v, const std::string& q) { t->set_operator_(w.Str(v, q)); }},
                     {"value", [&](const YAML::Node& v, const std::string& q) { t->set_value(w.Str(v, q)); }},
                     {"effect", [&](const YAML::Node& v, const std::string& q) { t->set_effect(w.Str(v, q)); }},
                     {"tolerationSeconds", [&](const YAML::Node& v, const std::string& q) {
                        int64_t s;
                        if (w.Int(v, q, &s)) t->set_toleration_seconds(s);
                      }}});
            });
          }},
         {"priorityClassName", [&](const YAML::Node& n, const std::string& p) {
            pod->set_priority_class_name(w.Str(n, p));
          }},
         {"priority", [&](const YAML::Node& n, const std::string& p) {
            int32_t v;
            if (w.Int32(n, p, &v)) pod->set_priority(v);
          }},
         {"resources", [&](const YAML::Node& n, const std::string& p) {
            Resources(w, n, p, pod->mutable_resources());
          }},
         {"schedulingGates", [&](const YAML::Node& n, const std::string& p) {
            w.List(n, p, [&](const YAML::Node& g, const std::string& q) {
              v1::PodSchedulingGate* gate = pod->add_scheduling_gates();
              w.Map(g, q, {{"name", [&](const YAML::Node& v, const std::string& r) {
                              gate->set_name(w.Str(v, r));
                            }}});
            });
          }}},
        kIgnoredPodFields);
}

}  // namespace

void WorkloadStatus(Walker& w, const YAML::Node& node, const std::string& path,
                    v1::WorkloadStatus* status) {
  w.Map(node, path,
        {{"requeueState", [&](const YAML::Node& n, const std::string& p) {
            v1::RequeueState* r = status->mutable_requeue_state();
            w.Map(n, p,
                  {{"count", [&](const YAML::Node& x, const std::string& xp) {
                      int32_t v;
                      if (w.Int32(x, xp, &v)) r->set_count(v);
                    }},
                   {"requeueAt", [&](const YAML::Node& x, const std::string& xp) {
                      w.Time(x, xp, r->mutable_requeue_at());
                    }}});
          }},
         {"schedulingStats", [&](const YAML::Node& n, const std::string& p) {
            w.Map(n, p, {{"evictions", [&](const YAML::Node& x, const std::string& xp) {
                            w.List(x, xp, [&](const YAML::Node& en, const std::string& ep) {
                              v1::WorkloadSchedulingStatsEviction* e =
                                  status->mutable_scheduling_stats()->add_evictions();
                              w.Map(en, ep,
                                    {{"reason", [&](const YAML::Node& y, const std::string& yp) {
                                        e->set_reason(w.Str(y, yp));
                                      }},
                                     {"underlyingCause",
                                      [&](const YAML::Node& y, const std::string& yp) {
                                        e->set_underlying_cause(w.Str(y, yp));
                                      }},
                                     {"count", [&](const YAML::Node& y, const std::string& yp) {
                                        int32_t v;
                                        if (w.Int32(y, yp, &v)) e->set_count(v);
                                      }}});
                            });
                          }}});
          }},
         {"accumulatedPastExecutionTimeSeconds", [&](const YAML::Node& n, const std::string& p) {
            int64_t v;
            if (w.Int(n, p, &v)) status->set_accumulated_past_execution_time_seconds(v);
          }},
         {"accumulatedPastExexcutionTimeSeconds", [&](const YAML::Node& n, const std::string& p) {
            int64_t v;  // v1beta1's spelling
            if (w.Int(n, p, &v)) status->set_accumulated_past_execution_time_seconds(v);
          }},
         {"admission", [&](const YAML::Node& n, const std::string& p) {
            v1::Admission* a = status->mutable_admission();
            w.Map(n, p,
                  {{"clusterQueue", [&](const YAML::Node& x, const std::string& xp) {
                      a->set_cluster_queue(w.Str(x, xp));
                    }},
                   {"podSetAssignments", [&](const YAML::Node& x, const std::string& xp) {
                      w.List(x, xp, [&](const YAML::Node& pn, const std::string& pp) {
                        v1::PodSetAssignment* psa = a->add_pod_set_assignments();
                        w.Map(pn, pp,
                              {{"name", [&](const YAML::Node& y, const std::string& yp) {
                                  psa->set_name(w.Str(y, yp));
                                }},
                               {"flavors", [&](const YAML::Node& y, const std::string& yp) {
                                  w.StringMap(y, yp, psa->mutable_flavors());
                                }},
                               {"resourceUsage", [&](const YAML::Node& y, const std::string& yp) {
                                  w.StringMap(y, yp, psa->mutable_resource_usage());
                                }},
                               {"count", [&](const YAML::Node& y, const std::string& yp) {
                                  int32_t v;
                                  if (w.Int32(y, yp, &v)) psa->set_count(v);
                                }}},
                              {"topologyAssignment", "delayedTopologyRequest"});
                      });
                    }}});
          }},
         {"conditions", [&](const YAML::Node& n, const std::string& p) {
            w.List(n, p, [&](const YAML::Node& cn, const std::string& cp) {
              v1::Condition* c = status->add_conditions();
              w.Map(cn, cp,
                    {{"type", [&](const YAML::Node& y, const std::string& yp) { c->set_type(w.Str(y, yp)); }},
                     {"status", [&](const YAML::Node& y, const std::string& yp) { c->set_status(w.Str(y, yp)); }},
                     {"reason", [&](const YAML::Node& y, const std::string& yp) { c->set_reason(w.Str(y, yp)); }},
                     {"message", [&](const YAML::Node& y, const std::string& yp) { c->set_message(w.Str(y, yp)); }},
                     {"lastTransitionTime", [&](const YAML::Node& y, const std::string& yp) {
                        w.Time(y, yp, c->mutable_last_transition_time());
                      }}},
                    {"observedGeneration"});
            });
          }}},
        {"reclaimablePods", "admissionChecks", "resourceRequests", "nominatedClusterNames",
         "clusterName", "unhealthyNodes"});
}

static void PodSets(Walker& w, const YAML::Node& node, const std::string& path,
             google::protobuf::RepeatedPtrField<v1::PodSet>* out) {
  w.List(node, path, [&](const YAML::Node& psn, const std::string& psp) {
    v1::PodSet* ps = out->Add();
    ps->set_count(1);  // Kueue's default
    w.Map(psn, psp,
          {{"name", [&](const YAML::Node& x, const std::string& xp) { ps->set_name(w.Str(x, xp)); }},
           {"count", [&](const YAML::Node& x, const std::string& xp) {
              int32_t v;
              if (w.Int32(x, xp, &v)) ps->set_count(v);
            }},
           {"minCount", [&](const YAML::Node& x, const std::string& xp) {
              int32_t v;
              if (w.Int32(x, xp, &v)) ps->set_min_count(v);
            }},
           {"template", [&](const YAML::Node& x, const std::string& xp) {
              v1::PodTemplate* t = ps->mutable_template_();
              w.Map(x, xp,
                    {{"metadata", [&](const YAML::Node& m, const std::string& mp) {
                        w.Map(m, mp,
                              {{"labels", [&](const YAML::Node& y, const std::string& yp) {
                                  w.StringMap(y, yp, t->mutable_labels());
                                }},
                               {"annotations", [&](const YAML::Node& y, const std::string& yp) {
                                  w.StringMap(y, yp, t->mutable_annotations());
                                }}},
                              {"name", "namespace", "generateName"});
                      }},
                     {"spec", [&](const YAML::Node& s, const std::string& sp) {
                        PodSpec(w, s, sp, t->mutable_spec());
                      }}});
            }}},
          {"topologyRequest"});
  });
}

void WorkloadSpec(Walker& w, const YAML::Node& node, const std::string& path,
                  v1::WorkloadSpec* spec) {
  w.Map(node, path,
        {{"podSets", [&](const YAML::Node& n, const std::string& p) {
            PodSets(w, n, p, spec->mutable_pod_sets());
          }},
         {"queueName", [&](const YAML::Node& n, const std::string& p) { spec->set_queue_name(w.Str(n, p)); }},
         {"priorityClassName", [&](const YAML::Node& n, const std::string& p) {  // v1beta1
            spec->mutable_priority_class_ref()->set_name(w.Str(n, p));
          }},
         {"priorityClassSource", [&](const YAML::Node& n, const std::string& p) {  // v1beta1
            const std::string source = w.Str(n, p);
            if (source == "kueue.x-k8s.io/workloadpriorityclass") {
              spec->mutable_priority_class_ref()->set_group("kueue.x-k8s.io");
              spec->mutable_priority_class_ref()->set_kind("WorkloadPriorityClass");
            } else if (source == "scheduling.k8s.io/priorityclass") {
              spec->mutable_priority_class_ref()->set_group("scheduling.k8s.io");
              spec->mutable_priority_class_ref()->set_kind("PriorityClass");
            } else if (!source.empty()) {
              w.Error(p, "must be kueue.x-k8s.io/workloadpriorityclass or "
                         "scheduling.k8s.io/priorityclass");
            }
          }},
         {"priorityClassRef", [&](const YAML::Node& n, const std::string& p) {
            v1::PriorityClassRef* ref = spec->mutable_priority_class_ref();
            w.Map(n, p,
                  {{"group", [&](const YAML::Node& x, const std::string& xp) { ref->set_group(w.Str(x, xp)); }},
                   {"kind", [&](const YAML::Node& x, const std::string& xp) { ref->set_kind(w.Str(x, xp)); }},
                   {"name", [&](const YAML::Node& x, const std::string& xp) { ref->set_name(w.Str(x, xp)); }}});
          }},
         {"priority", [&](const YAML::Node& n, const std::string& p) {
            int32_t v;
            if (w.Int32(n, p, &v)) spec->set_priority(v);
          }},
         {"active", [&](const YAML::Node& n, const std::string& p) {
            bool v;
            if (w.Bool(n, p, &v)) spec->set_active(v);
          }},
         {"maximumExecutionTimeSeconds", [&](const YAML::Node& n, const std::string& p) {
            int32_t v;
            if (w.Int32(n, p, &v)) spec->set_maximum_execution_time_seconds(v);
          }}});
}

absl::StatusOr<std::vector<v1::PodSet>> ParsePodSets(const std::string& text) {
  YAML::Node node;
  try {
    node = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not YAML or JSON: ", e.what()));
  }
  if (!node.IsSequence()) return absl::InvalidArgumentError("must be a list of pod sets");
  Walker w("");
  google::protobuf::RepeatedPtrField<v1::PodSet> sets;
  PodSets(w, node, "", &sets);
  if (!w.errors().empty()) {
    // The walker prefixes each error with its (empty) location: drop the leading ": ".
    std::vector<std::string> errors;
    for (const std::string& e : w.errors()) errors.push_back(e.substr(2));
    return absl::InvalidArgumentError(absl::StrJoin(errors, "; "));
  }
  return std::vector<v1::PodSet>(sets.begin(), sets.end());
}

}  // namespace admitd::manifest
