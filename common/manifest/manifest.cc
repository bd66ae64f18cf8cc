#include "common/manifest/manifest.h"

#include "common/status.h"
#include "common/manifest/manifest_walker.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"

namespace admitd::manifest {
namespace {

using H = Walker::Handler;

void Metadata(Walker& w, const YAML::Node& node, const std::string& path, v1::ObjectMeta* meta) {
  w.Map(node, path,
        {{"name", [&](const YAML::Node& n, const std::string& p) { meta->set_name(w.Str(n, p)); }},
         {"namespace",
          [&](const YAML::Node& n, const std::string& p) { meta->set_namespace_(w.Str(n, p)); }},
         {"uid", [&](const YAML::Node& n, const std::string& p) { meta->set_uid(w.Str(n, p)); }},
         {"labels", [&](const YAML::Node& n, const std::string& p) {
            w.StringMap(n, p, meta->mutable_labels());
          }},
         {"annotations", [&](const YAML::Node& n, const std::string& p) {
            w.StringMap(n, p, meta->mutable_annotations());
          }},
         {"creationTimestamp", [&](const YAML::Node& n, const std::string& p) {
            w.Time(n, p, meta->mutable_creation_timestamp());
          }},
         // The job a workload belongs to: Resize finds an elastic job's workloads by its UID.
         {"ownerReferences", [&](const YAML::Node& n, const std::string& p) {
            w.List(n, p, [&](const YAML::Node& o, const std::string& q) {
              v1::OwnerReference* ref = meta->add_owner_references();
              w.Map(o, q,
                    {{"apiVersion", [&](const YAML::Node& v, const std::string& r) {
                        ref->set_api_version(w.Str(v, r));
                      }},
                     {"kind", [&](const YAML::Node& v, const std::string& r) { ref->set_kind(w.Str(v, r)); }},
                     {"name", [&](const YAML::Node& v, const std::string& r) { ref->set_name(w.Str(v, r)); }},
                     {"uid", [&](const YAML::Node& v, const std::string& r) { ref->set_uid(w.Str(v, r)); }},
                     {"controller", [&](const YAML::Node& v, const std::string& r) {
                        bool b = false;
                        if (w.Bool(v, r, &b)) ref->set_controller(b);
                      }}},
                    {"blockOwnerDeletion"});
            });
          }}},
        {"resourceVersion", "generation", "managedFields", "finalizers",
         "selfLink", "generateName", "deletionTimestamp", "deletionGracePeriodSeconds"});
}

void Tolerations(Walker& w, const YAML::Node& node, const std::string& path,
                 google::protobuf::RepeatedPtrField<v1::Toleration>* out) {
  w.List(node, path, [&](const YAML::Node& n, const std::string& p) {
    v1::Toleration* t = out->Add();
    w.Map(n, p,
          {{"key", [&](const YAML::Node& v, const std::string& q) { t->set_key(w.Str(v, q)); }},
           {"operator",
            [&](const YAML::Node& v, const std::string& q) { t->set_operator_(w.Str(v, q)); }},
           {"value", [&](const YAML::Node& v, const std::string& q) { t->set_value(w.Str(v, q)); }},
           {"effect", [&](const YAML::Node& v, const std::string& q) { t->set_effect(w.Str(v, q)); }},
           {"tolerationSeconds", [&](const YAML::Node& v, const std::string& q) {
              int64_t s;
              if (w.Int(v, q, &s)) t->set_toleration_seconds(s);
            }}});
  });
}

void ResourceGroups(Walker& w, const YAML::Node& node, const std::string& path,
                    google::protobuf::RepeatedPtrField<v1::ResourceGroup>* out) {
  w.List(node, path, [&](const YAML::Node& n, const std::string& p) {
    v1::ResourceGroup* g = out->Add();
    w.Map(n, p,
          {{"coveredResources", [&](const YAML::Node& v, const std::string& q) {
              w.StringList(v, q, g->mutable_covered_resources());
            }},
           {"flavors", [&](const YAML::Node& v, const std::string& q) {
              w.List(v, q, [&](const YAML::Node& fn, const std::string& fp) {
                v1::FlavorQuotas* f = g->add_flavors();
                w.Map(fn, fp,
                      {{"name", [&](const YAML::Node& x, const std::string& xp) {
                          f->set_name(w.Str(x, xp));
                        }},
                       {"resources", [&](const YAML::Node& x, const std::string& xp) {
                          w.List(x, xp, [&](const YAML::Node& rn, const std::string& rp) {
                            v1::ResourceQuota* r = f->add_resources();
                            w.Map(rn, rp,
                                  {{"name", [&](const YAML::Node& y, const std::string& yp) {
                                      r->set_name(w.Str(y, yp));
                                    }},
                                   {"nominalQuota", [&](const YAML::Node& y, const std::string& yp) {
                                      r->set_nominal_quota(w.Str(y, yp));
                                    }},
                                   {"borrowingLimit", [&](const YAML::Node& y, const std::string& yp) {
                                      r->set_borrowing_limit(w.Str(y, yp));
                                    }},
                                   {"lendingLimit", [&](const YAML::Node& y, const std::string& yp) {
                                      r->set_lending_limit(w.Str(y, yp));
                                    }}});
                          });
                        }}});
              });
            }}});
  });
}

void LabelSelector(Walker& w, const YAML::Node& node, const std::string& path,
                   v1::LabelSelector* sel) {
  w.Map(node, path,
        {{"matchLabels", [&](const YAML::Node& v, const std::string& q) {
            w.StringMap(v, q, sel->mutable_match_labels());
          }},
         {"matchExpressions", [&](const YAML::Node& v, const std::string& q) {
            w.List(v, q, [&](const YAML::Node& en, const std::string& ep) {
              v1::LabelSelectorRequirement* e = sel->add_match_expressions();
              w.Map(en, ep,
                    {{"key", [&](const YAML::Node& x, const std::string& xp) { e->set_key(w.Str(x, xp)); }},
                     {"operator", [&](const YAML::Node& x, const std::string& xp) {
                        e->set_operator_(w.Str(x, xp));
                      }},
                     {"values", [&](const YAML::Node& x, const std::string& xp) {
                        w.StringList(x, xp, e->mutable_values());
                      }}});
            });
          }}});
}

// spec.fairSharing of a ClusterQueue, a Cohort or a LocalQueue.
void FairSharing(Walker& w, const YAML::Node& node, const std::string& path, v1::FairSharing* fs) {
  w.Map(node, path, {{"weight", [&](const YAML::Node& n, const std::string& p) {
                        fs->set_weight(w.Str(n, p));
                      }}});
}

void ClusterQueueSpec(Walker& w, const YAML::Node& node, const std::string& path,
                      v1::ClusterQueueSpec* spec) {
  auto str = [&](std::function<void(const std::string&)> set) -> H {
    return [&w, set](const YAML::Node& n, const std::string& p) { set(w.Str(n, p)); };
  };
  w.Map(node, path,
        {{"resourceGroups", [&](const YAML::Node& n, const std::string& p) {
            ResourceGroups(w, n, p, spec->mutable_resource_groups());
          }},
         {"cohort", str([&](const std::string& v) { spec->set_cohort_name(v); })},
         {"cohortName", str([&](const std::string& v) { spec->set_cohort_name(v); })},
         {"queueingStrategy", str([&](const std::string& v) { spec->set_queueing_strategy(v); })},
         {"stopPolicy", str([&](const std::string& v) { spec->set_stop_policy(v); })},
         {"namespaceSelector", [&](const YAML::Node& n, const std::string& p) {
            spec->mutable_namespace_selector();  // present, even when empty: {} selects all
            LabelSelector(w, n, p, spec->mutable_namespace_selector());
          }},
         {"flavorFungibility", [&](const YAML::Node& n, const std::string& p) {
            v1::FlavorFungibility* ff = spec->mutable_flavor_fungibility();
            w.Map(n, p,
                  {{"whenCanBorrow", str([ff](const std::string& v) { ff->set_when_can_borrow(v); })},
                   {"whenCanPreempt", str([ff](const std::string& v) { ff->set_when_can_preempt(v); })},
                   {"preference", str([ff](const std::string& v) { ff->set_preference(v); })}});
          }},
         {"preemption", [&](const YAML::Node& n, const std::string& p) {
            v1::ClusterQueuePreemption* pr = spec->mutable_preemption();
            w.Map(n, p,
                  {{"withinClusterQueue",
                    str([pr](const std::string& v) { pr->set_within_cluster_queue(v); })},
                   {"reclaimWithinCohort",
                    str([pr](const std::string& v) { pr->set_reclaim_within_cohort(v); })},
                   {"borrowWithinCohort", [&w, pr](const YAML::Node& b, const std::string& bp) {
                      v1::BorrowWithinCohort* bwc = pr->mutable_borrow_within_cohort();
                      w.Map(b, bp,
                            {{"policy", [&w, bwc](const YAML::Node& x, const std::string& xp) {
                                bwc->set_policy(w.Str(x, xp));
                              }},
                             {"maxPriorityThreshold",
                              [&w, bwc](const YAML::Node& x, const std::string& xp) {
                                int64_t v;
                                if (w.Int(x, xp, &v)) bwc->set_max_priority_threshold(v);
                              }}});
                    }}});
          }},
         {"fairSharing", [&](const YAML::Node& n, const std::string& p) {
            FairSharing(w, n, p, spec->mutable_fair_sharing());
          }},
         {"admissionScope", [&](const YAML::Node& n, const std::string& p) {
            v1::AdmissionScope* scope = spec->mutable_admission_scope();
            w.Map(n, p, {{"admissionMode", str([scope](const std::string& v) {
                            scope->set_admission_mode(v);
                          })}});
          }},
         {"admissionChecks", [&](const YAML::Node& n, const std::string& p) {  // v1beta1
            w.List(n, p, [&](const YAML::Node& x, const std::string& xp) {
              spec->mutable_admission_checks_strategy()->add_admission_checks()->set_name(
                  w.Str(x, xp));
            });
          }},
         {"admissionChecksStrategy", [&](const YAML::Node& n, const std::string& p) {
            w.Map(n, p, {{"admissionChecks", [&](const YAML::Node& l, const std::string& lp) {
                            w.List(l, lp, [&](const YAML::Node& x, const std::string& xp) {
                              auto* rule = spec->mutable_admission_checks_strategy()
                                               ->add_admission_checks();
                              w.Map(x, xp,
                                    {{"name", [&](const YAML::Node& y, const std::string& yp) {
                                        rule->set_name(w.Str(y, yp));
                                      }},
                                     {"onFlavors", [&](const YAML::Node& y, const std::string& yp) {
                                        w.StringList(y, yp, rule->mutable_on_flavors());
                                      }}});
                            });
                          }}});
          }}},
        {"concurrentAdmissionPolicy"});
}

void ParseDocument(Walker& w, const YAML::Node& doc, Manifest* m) {
  std::string api_version, kind;
  if (doc["apiVersion"]) api_version = w.Str(doc["apiVersion"], "apiVersion");
  if (doc["kind"]) kind = w.Str(doc["kind"], "kind");
  if (api_version == "v1" && kind == "Namespace") {
    // A core Namespace: its name and labels are what namespaceSelectors read.
    m->kind = kind;
    v1::ObjectMeta* meta = m->object.mutable_namespace_()->mutable_metadata();
    w.Map(doc, "",
          {{"apiVersion", [](const YAML::Node&, const std::string&) {}},
           {"kind", [](const YAML::Node&, const std::string&) {}},
           {"metadata",
            [&w, meta](const YAML::Node& n, const std::string& p) { Metadata(w, n, p, meta); }}},
          {"spec", "status"});
    if (meta->name().empty()) w.Error("metadata.name", "is required");
    return;
  }
  if (api_version != "kueue.x-k8s.io/v1beta1" && api_version != "kueue.x-k8s.io/v1beta2") {
    w.Error("apiVersion", absl::StrCat("unsupported \"", api_version,
                                       "\" (want kueue.x-k8s.io/v1beta1 or v1beta2, or v1 for a "
                                       "Namespace)"));
    return;
  }
  m->kind = kind;
  v1::ObjectMeta* meta = nullptr;
  H spec_handler;
  std::map<std::string, H> top;
  if (kind == "ResourceFlavor") {
    auto* rf = m->object.mutable_resource_flavor();
    meta = rf->mutable_metadata();
    top["spec"] = [&w, rf](const YAML::Node& n, const std::string& p) {
      auto* s = rf->mutable_spec();
      w.Map(n, p,
            {{"nodeLabels", [&w, s](const YAML::Node& x, const std::string& xp) {
                w.StringMap(x, xp, s->mutable_node_labels());
              }},
             {"nodeTaints", [&w, s](const YAML::Node& x, const std::string& xp) {
                w.List(x, xp, [&](const YAML::Node& tn, const std::string& tp) {
                  v1::Taint* t = s->add_node_taints();
                  w.Map(tn, tp,
                        {{"key", [&](const YAML::Node& y, const std::string& yp) { t->set_key(w.Str(y, yp)); }},
                         {"value", [&](const YAML::Node& y, const std::string& yp) { t->set_value(w.Str(y, yp)); }},
                         {"effect", [&](const YAML::Node& y, const std::string& yp) { t->set_effect(w.Str(y, yp)); }}},
                        {"timeAdded"});
                });
              }},
             {"tolerations", [&w, s](const YAML::Node& x, const std::string& xp) {
                Tolerations(w, x, xp, s->mutable_tolerations());
              }},
             {"topologyName", [&w, s](const YAML::Node& x, const std::string& xp) {
                s->set_topology_name(w.Str(x, xp));
              }}});
    };
  } else if (kind == "Cohort") {
    auto* c = m->object.mutable_cohort();
    meta = c->mutable_metadata();
    top["spec"] = [&w, c](const YAML::Node& n, const std::string& p) {
      auto* s = c->mutable_spec();
      H parent = [&w, s](const YAML::Node& x, const std::string& xp) {
        s->set_parent_name(w.Str(x, xp));
      };
      w.Map(n, p,
            {{"parent", parent},
             {"parentName", parent},
             {"resourceGroups", [&w, s](const YAML::Node& x, const std::string& xp) {
                ResourceGroups(w, x, xp, s->mutable_resource_groups());
              }},
             {"fairSharing", [&w, s](const YAML::Node& x, const std::string& xp) {
                FairSharing(w, x, xp, s->mutable_fair_sharing());
              }}});
    };
  } else if (kind == "ClusterQueue") {
    auto* cq = m->object.mutable_cluster_queue();
    meta = cq->mutable_metadata();
    top["spec"] = [&w, cq](const YAML::Node& n, const std::string& p) {
      ClusterQueueSpec(w, n, p, cq->mutable_spec());
    };
  } else if (kind == "LocalQueue") {
    auto* lq = m->object.mutable_local_queue();
    meta = lq->mutable_metadata();
    top["spec"] = [&w, lq](const YAML::Node& n, const std::string& p) {
      auto* s = lq->mutable_spec();
      w.Map(n, p,
            {{"clusterQueue", [&w, s](const YAML::Node& x, const std::string& xp) {
                s->set_cluster_queue(w.Str(x, xp));
              }},
             {"stopPolicy", [&w, s](const YAML::Node& x, const std::string& xp) {
                s->set_stop_policy(w.Str(x, xp));
              }},
             {"fairSharing", [&w, s](const YAML::Node& x, const std::string& xp) {
                FairSharing(w, x, xp, s->mutable_fair_sharing());
              }}});
    };
  } else if (kind == "WorkloadPriorityClass") {
    auto* wpc = m->object.mutable_workload_priority_class();
    meta = wpc->mutable_metadata();
    top["value"] = [&w, wpc](const YAML::Node& n, const std::string& p) {
      int32_t v;
      if (w.Int32(n, p, &v)) wpc->set_value(v);
    };
    top["description"] = [&w, wpc](const YAML::Node& n, const std::string& p) {
      wpc->set_description(w.Str(n, p));
    };
  } else if (kind == "AdmissionCheck") {
    auto* ac = m->object.mutable_admission_check();
    meta = ac->mutable_metadata();
    top["spec"] = [&w, ac](const YAML::Node& n, const std::string& p) {
      auto* s = ac->mutable_spec();
      w.Map(n, p,
            {{"controllerName", [&w, s](const YAML::Node& x, const std::string& xp) {
                s->set_controller_name(w.Str(x, xp));
              }},
             {"parameters", [&w, s](const YAML::Node& x, const std::string& xp) {
                auto* ref = s->mutable_parameters();
                w.Map(x, xp,
                      {{"apiGroup", [&w, ref](const YAML::Node& y, const std::string& yp) {
                          ref->set_api_group(w.Str(y, yp));
                        }},
                       {"kind", [&w, ref](const YAML::Node& y, const std::string& yp) {
                          ref->set_kind(w.Str(y, yp));
                        }},
                       {"name", [&w, ref](const YAML::Node& y, const std::string& yp) {
                          ref->set_name(w.Str(y, yp));
                        }}});
              }}},
            {"retryDelayMinutes"});
    };
  } else if (kind == "MultiKueueConfig") {
    auto* config = m->object.mutable_multi_kueue_config();
    meta = config->mutable_metadata();
    top["spec"] = [&w, config](const YAML::Node& n, const std::string& p) {
      auto* s = config->mutable_spec();
      w.Map(n, p,
            {{"clusters", [&w, s](const YAML::Node& x, const std::string& xp) {
                w.StringList(x, xp, s->mutable_clusters());
              }},
             {"quotaManagement", [&w, s](const YAML::Node& x, const std::string& xp) {
                s->set_quota_management(w.Str(x, xp));
              }}});
    };
  } else if (kind == "MultiKueueCluster") {
    auto* cluster = m->object.mutable_multi_kueue_cluster();
    meta = cluster->mutable_metadata();
    top["spec"] = [&w, cluster](const YAML::Node& n, const std::string& p) {
      auto* a = cluster->mutable_spec()->mutable_admitd();
      auto str = [&w](std::string* (v1::WorkerAdmitd::*field)(), v1::WorkerAdmitd* target) {
        return [&w, field, target](const YAML::Node& y, const std::string& yp) {
          *(target->*field)() = w.Str(y, yp);
        };
      };
      w.Map(n, p,
            {{"admitd", [&w, a, str](const YAML::Node& x, const std::string& xp) {
                w.Map(x, xp,
                      {{"address", str(&v1::WorkerAdmitd::mutable_address, a)},
                       {"caFile", str(&v1::WorkerAdmitd::mutable_ca_file, a)},
                       {"certFile", str(&v1::WorkerAdmitd::mutable_cert_file, a)},
                       {"keyFile", str(&v1::WorkerAdmitd::mutable_key_file, a)},
                       {"serverName", str(&v1::WorkerAdmitd::mutable_server_name, a)},
                       {"tokenFile", str(&v1::WorkerAdmitd::mutable_token_file, a)},
                       {"tls", [&w, a](const YAML::Node& y, const std::string& yp) {
                          bool b = false;
                          if (w.Bool(y, yp, &b)) a->set_tls(b);
                        }}});
              }}},
            // A kubeconfig or ClusterProfile names a Kubernetes API server; admitd dispatches
            // to the worker cluster's admitd instead.
            {});
    };
  } else if (kind == "Workload") {
    m->is_workload = true;
    meta = m->workload.mutable_metadata();
    top["spec"] = [&w, m](const YAML::Node& n, const std::string& p) {
      WorkloadSpec(w, n, p, m->workload.mutable_spec());
    };
    top["status"] = [&w, m](const YAML::Node& n, const std::string& p) {
      WorkloadStatus(w, n, p, m->workload.mutable_status());
    };
  } else {
    w.Error("kind", absl::StrCat("unsupported \"", kind,
                                 "\" (want ResourceFlavor, Cohort, ClusterQueue, LocalQueue, "
                                 "WorkloadPriorityClass, AdmissionCheck, MultiKueueConfig, "
                                 "MultiKueueCluster or Workload)"));
    return;
  }
  top["apiVersion"] = [](const YAML::Node&, const std::string&) {};
  top["kind"] = [](const YAML::Node&, const std::string&) {};
  top["metadata"] = [&w, meta](const YAML::Node& n, const std::string& p) {
    Metadata(w, n, p, meta);
  };
  w.Map(doc, "", top, {"status"});
  if ((kind == "LocalQueue" || kind == "Workload") && meta->namespace_().empty()) {
    meta->set_namespace_("default");
  }
  if (meta->name().empty()) w.Error("metadata.name", "is required");
}

// The documents of a YAML stream, split at its `---` lines as kubectl splits them, each to be
// loaded alone. yaml-cpp 0.7's LoadAll never returns on a stream whose document starts with a
// flow indicator (",", as in "---\n,"): it adds empty documents forever. Text before the first
// `---` that holds no node (blank lines, comments, directives) is no document.
std::vector<std::string> SplitDocuments(const std::string& text) {
  std::vector<std::string> docs(1);
  bool content = false;  // whether the current document has a line other than those above
  const std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    const absl::string_view line = lines[i];
    const bool marker = absl::StartsWith(line, "---") &&
                        (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
    if (marker && (docs.size() > 1 || content)) {
      // Blank lines first, so yaml-cpp's error positions stay those of the whole text.
      docs.emplace_back(i, '\n');
    }
    absl::string_view stripped = absl::StripLeadingAsciiWhitespace(line);
    // The marker line may hold the document's node ("--- {a: b}").
    if (marker || (!stripped.empty() && stripped[0] != '#' && stripped[0] != '%')) content = true;
    docs.back().append(line.data(), line.size());
    if (i + 1 < lines.size()) docs.back().push_back('\n');
  }
  return docs;
}

}  // namespace

absl::StatusOr<std::vector<Manifest>> ParseManifests(const std::string& text,
                                                     const std::string& file) {
  std::vector<YAML::Node> docs;
  try {
    for (const std::string& doc : SplitDocuments(text)) docs.push_back(YAML::Load(doc));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": ", e.what()));
  }
  std::vector<Manifest> out;
  std::vector<std::string> errors;
  std::vector<FieldViolation> violations;  // the same, as fields of documents[i]
  int index = 0;
  for (const YAML::Node& doc : docs) {
    ++index;
    if (!doc || doc.IsNull()) continue;
    std::string kind = doc.IsMap() && doc["kind"] && doc["kind"].IsScalar() ? doc["kind"].Scalar() : "";
    std::string name;
    if (doc.IsMap() && doc["metadata"] && doc["metadata"].IsMap() && doc["metadata"]["name"] &&
        doc["metadata"]["name"].IsScalar()) {
      name = doc["metadata"]["name"].Scalar();
    }
    Manifest m;
    m.source = absl::StrCat(file, ": document ", index, " (", kind.empty() ? "?" : kind, " \"",
                            name, "\")");
    Walker w(m.source);
    if (!doc.IsMap()) {
      w.Error("", "a document must be a mapping");
    } else {
      ParseDocument(w, doc, &m);
    }
    if (w.errors().empty()) {
      out.push_back(std::move(m));
    } else {
      errors.insert(errors.end(), w.errors().begin(), w.errors().end());
      for (const auto& [path, what] : w.problems()) {
        violations.push_back({absl::StrCat("documents[", index - 1, "]",
                                           path.empty() ? "" : ".", path),
                              what});
      }
    }
  }
  if (!errors.empty()) {
    // The lines as the message (what admitctl prints), the fields as a BadRequest.
    absl::Status status = absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
    InvalidArgument(violations).ForEachPayload(
        [&](absl::string_view url, const absl::Cord& payload) { status.SetPayload(url, payload); });
    return status;
  }
  return out;
}

absl::StatusOr<std::vector<Manifest>> ReadManifests(const std::string& path) {
  auto read_file = [](const std::string& name, std::istream& in) {
    std::stringstream ss;
    ss << in.rdbuf();
    return ParseManifests(ss.str(), name);
  };
  if (path == "-") return read_file("<stdin>", std::cin);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
      const std::string name = e.path().string();
      if (absl::EndsWith(name, ".yaml") || absl::EndsWith(name, ".yml")) files.push_back(name);
    }
    std::sort(files.begin(), files.end());
    std::vector<Manifest> all;
    for (const std::string& f : files) {
      std::ifstream in(f);
      auto parsed = read_file(f, in);
      if (!parsed.ok()) return parsed.status();
      for (Manifest& m : *parsed) all.push_back(std::move(m));
    }
    return all;
  }
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  return read_file(path, in);
}

void SortForApply(std::vector<Manifest>* manifests) {
  static const std::map<std::string, int> kOrder = {
      {"Namespace", 0}, {"WorkloadPriorityClass", 0}, {"ResourceFlavor", 1}, {"AdmissionCheck", 1},
      {"MultiKueueCluster", 0}, {"MultiKueueConfig", 0},
      {"Cohort", 2},                {"ClusterQueue", 3},   {"LocalQueue", 4},
      {"Workload", 5}};
  std::stable_sort(manifests->begin(), manifests->end(), [](const Manifest& a, const Manifest& b) {
    return kOrder.at(a.kind) < kOrder.at(b.kind);
  });
}

}  // namespace admitd::manifest
