#include "clients/table.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace admitd::clients {
namespace {

const v1::Condition* Find(const v1::Workload& wl, const std::string& type) {
  for (const v1::Condition& c : wl.status().conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

bool IsTrue(const v1::Workload& wl, const std::string& type) {
  const v1::Condition* c = Find(wl, type);
  return c != nullptr && c->status() == "True";
}

std::string Age(const google::protobuf::Timestamp& ts, absl::Time now) {
  if (ts.seconds() == 0) return "-";
  const absl::Duration d = now - absl::FromUnixSeconds(ts.seconds());
  if (d < absl::Minutes(2)) return absl::StrCat(absl::ToInt64Seconds(d), "s");
  if (d < absl::Hours(2)) return absl::StrCat(absl::ToInt64Minutes(d), "m");
  if (d < absl::Hours(48)) return absl::StrCat(absl::ToInt64Hours(d), "h");
  return absl::StrCat(absl::ToInt64Hours(d) / 24, "d");
}

std::string Usage(const google::protobuf::RepeatedPtrField<v1::FlavorUsage>& usage) {
  std::vector<std::string> parts;
  for (const v1::FlavorUsage& fu : usage) {
    for (const v1::ResourceUsage& r : fu.resources()) {
      parts.push_back(absl::StrCat(fu.name(), "/", r.name(), "=", r.total()));
    }
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, ",");
}

std::string Quota(const google::protobuf::RepeatedPtrField<v1::ResourceGroup>& groups) {
  std::vector<std::string> parts;
  for (const v1::ResourceGroup& g : groups) {
    for (const v1::FlavorQuotas& f : g.flavors()) {
      for (const v1::ResourceQuota& q : f.resources()) {
        parts.push_back(absl::StrCat(f.name(), "/", q.name(), "=", q.nominal_quota()));
      }
    }
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, ",");
}

// status.fairSharing.weightedShare; "inf" for a weight-0 node that borrows (INT64_MAX).
template <typename Status>
std::string WeightedShare(const Status& status) {
  if (!status.has_fair_sharing()) return "-";
  const int64_t share = status.fair_sharing().weighted_share();
  return share == std::numeric_limits<int64_t>::max() ? "inf" : absl::StrCat(share);
}

}  // namespace

std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 3, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string StateName(const v1::Workload& wl) {
  if (IsTrue(wl, "Finished")) return "Finished";
  if (wl.spec().has_active() && !wl.spec().active()) return "Inactive";
  const bool reserved = IsTrue(wl, "QuotaReserved") && wl.status().has_admission();
  if (reserved && IsTrue(wl, "Evicted")) return "Evicted";
  if (reserved && IsTrue(wl, "Admitted")) return "Admitted";
  if (reserved) return "QuotaReserved";
  return "Pending";
}

std::string ObjectName(const v1::QueueObject& o) {
  switch (o.kind_case()) {
    case v1::QueueObject::kResourceFlavor: return o.resource_flavor().metadata().name();
    case v1::QueueObject::kCohort: return o.cohort().metadata().name();
    case v1::QueueObject::kClusterQueue: return o.cluster_queue().metadata().name();
    case v1::QueueObject::kLocalQueue: return o.local_queue().metadata().name();
    case v1::QueueObject::kWorkloadPriorityClass: return o.workload_priority_class().metadata().name();
    case v1::QueueObject::kAdmissionCheck: return o.admission_check().metadata().name();
    case v1::QueueObject::kNamespace: return o.namespace_().metadata().name();
    case v1::QueueObject::kMultiKueueConfig: return o.multi_kueue_config().metadata().name();
    case v1::QueueObject::kMultiKueueCluster: return o.multi_kueue_cluster().metadata().name();
    default: return "";
  }
}

std::string WorkloadTable(const std::vector<v1::Workload>& workloads, absl::Time now) {
  std::vector<std::vector<std::string>> rows = {
      {"NAMESPACE", "NAME", "QUEUE", "RESERVED IN", "STATE", "REASON", "AGE"}};
  for (const v1::Workload& wl : workloads) {
    std::string reason = "-";
    if (const v1::Condition* c = Find(wl, "QuotaReserved"); c != nullptr && c->status() != "True") {
      reason = c->reason();
    }
    if (const v1::Condition* c = Find(wl, "Finished"); c != nullptr && c->status() == "True") {
      reason = c->reason();
    }
    const std::string cq = wl.status().admission().cluster_queue();
    rows.push_back({wl.metadata().namespace_(), wl.metadata().name(), wl.spec().queue_name(),
                    cq.empty() ? "-" : cq, StateName(wl), reason,
                    Age(wl.metadata().creation_timestamp(), now)});
  }
  return FormatTable(rows);
}

std::string QueueObjectTable(v1::ObjectKind kind, const std::vector<v1::QueueObject>& objects) {
  std::vector<std::vector<std::string>> rows;
  switch (kind) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR:
      rows.push_back({"NAME", "NODE LABELS", "TAINTS"});
      for (const auto& o : objects) {
        std::vector<std::string> labels;
        for (const auto& [k, v] : o.resource_flavor().spec().node_labels()) {
          labels.push_back(absl::StrCat(k, "=", v));
        }
        std::sort(labels.begin(), labels.end());
        rows.push_back({ObjectName(o), labels.empty() ? "-" : absl::StrJoin(labels, ","),
                        absl::StrCat(o.resource_flavor().spec().node_taints_size())});
      }
      break;
    case v1::OBJECT_KIND_COHORT: {
      // WEIGHTED SHARE (status.fairSharing.weightedShare) only while fair sharing is on.
      const bool shares = std::any_of(objects.begin(), objects.end(), [](const auto& o) {
        return o.cohort().status().has_fair_sharing();
      });
      rows.push_back({"NAME", "PARENT", "QUOTA"});
      if (shares) rows.back().push_back("WEIGHTED SHARE");
      for (const auto& o : objects) {
        const std::string& parent = o.cohort().spec().parent_name();
        rows.push_back({ObjectName(o), parent.empty() ? "-" : parent,
                        Quota(o.cohort().spec().resource_groups())});
        if (shares) rows.back().push_back(WeightedShare(o.cohort().status()));
      }
      break;
    }
    case v1::OBJECT_KIND_CLUSTER_QUEUE:
      // PENDING splits into ACTIVE (waiting for an attempt) and INADMISSIBLE (tried and set aside),
      // as Kueue's status.pendingWorkloadsStatus does; STATUS is the Active condition.
      rows.push_back({"NAME", "COHORT", "STRATEGY", "PENDING", "ACTIVE", "INADMISSIBLE", "ADMITTED",
                      "STATUS", "QUOTA", "USAGE"});
      if (std::any_of(objects.begin(), objects.end(), [](const auto& o) {
            return o.cluster_queue().status().has_fair_sharing();
          })) {
        rows.back().push_back("WEIGHTED SHARE");
      }
      for (const auto& o : objects) {
        const v1::ClusterQueue& cq = o.cluster_queue();
        std::string active = "-";
        for (const auto& c : cq.status().conditions()) {
          if (c.type() == "Active") active = c.status() == "True" ? "Active" : c.reason();
        }
        rows.push_back({ObjectName(o), cq.spec().cohort_name().empty() ? "-" : cq.spec().cohort_name(),
                        cq.spec().queueing_strategy().empty() ? "BestEffortFIFO"
                                                              : cq.spec().queueing_strategy(),
                        absl::StrCat(cq.status().pending_workloads()),
                        absl::StrCat(cq.status().pending_active_workloads()),
                        absl::StrCat(cq.status().pending_inadmissible_workloads()),
                        absl::StrCat(cq.status().admitted_workloads()), active,
                        Quota(cq.spec().resource_groups()), Usage(cq.status().flavors_reservation())});
        if (rows.front().size() > rows.back().size()) {
          rows.back().push_back(WeightedShare(cq.status()));
        }
      }
      break;
    case v1::OBJECT_KIND_LOCAL_QUEUE:
      rows.push_back({"NAMESPACE", "NAME", "CLUSTERQUEUE", "PENDING", "ACTIVE", "INADMISSIBLE",
                      "ADMITTED"});
      for (const auto& o : objects) {
        const v1::LocalQueue& lq = o.local_queue();
        rows.push_back({lq.metadata().namespace_(), ObjectName(o), lq.spec().cluster_queue(),
                        absl::StrCat(lq.status().pending_workloads()),
                        absl::StrCat(lq.status().pending_active_workloads()),
                        absl::StrCat(lq.status().pending_inadmissible_workloads()),
                        absl::StrCat(lq.status().admitted_workloads())});
      }
      break;
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS:
      rows.push_back({"NAME", "VALUE", "DESCRIPTION"});
      for (const auto& o : objects) {
        rows.push_back({ObjectName(o), absl::StrCat(o.workload_priority_class().value()),
                        o.workload_priority_class().description()});
      }
      break;
    case v1::OBJECT_KIND_NAMESPACE:
      rows.push_back({"NAME", "LABELS"});
      for (const auto& o : objects) {
        std::vector<std::string> labels;
        for (const auto& [k, v] : o.namespace_().metadata().labels()) {
          labels.push_back(absl::StrCat(k, "=", v));
        }
        std::sort(labels.begin(), labels.end());
        rows.push_back({ObjectName(o), labels.empty() ? "-" : absl::StrJoin(labels, ",")});
      }
      break;
    case v1::OBJECT_KIND_ADMISSION_CHECK:
      rows.push_back({"NAME", "CONTROLLER", "ACTIVE"});
      for (const auto& o : objects) {
        std::string active = "-";
        for (const v1::Condition& c : o.admission_check().status().conditions()) {
          if (c.type() == "Active") active = absl::StrCat(c.status(), " (", c.reason(), ")");
        }
        rows.push_back({ObjectName(o), o.admission_check().spec().controller_name(), active});
      }
      break;
    case v1::OBJECT_KIND_MULTIKUEUE_CONFIG:
      rows.push_back({"NAME", "CLUSTERS"});
      for (const auto& o : objects) {
        rows.push_back({ObjectName(o), absl::StrJoin(o.multi_kueue_config().spec().clusters(), ",")});
      }
      break;
    case v1::OBJECT_KIND_MULTIKUEUE_CLUSTER:
      rows.push_back({"NAME", "ADDRESS", "CONNECTED", "MESSAGE"});
      for (const auto& o : objects) {
        std::string connected = "False", message;
        for (const v1::Condition& c : o.multi_kueue_cluster().status().conditions()) {
          if (c.type() != "Active") continue;
          connected = c.status();
          message = c.message();
        }
        rows.push_back({ObjectName(o), o.multi_kueue_cluster().spec().admitd().address(),
                        connected, message});
      }
      break;
    default: break;
  }
  return FormatTable(rows);
}

std::string AdmitReport(const v1::AdmitResponse& resp) {
  const v1::Workload& wl = resp.workload();
  std::string out = absl::StrCat("workload ", wl.metadata().namespace_(), "/",
                                 wl.metadata().name(), ": ", StateName(wl), "\n");
  if (wl.status().has_admission()) {
    absl::StrAppend(&out, "  cluster queue: ", wl.status().admission().cluster_queue(), "\n");
    for (const auto& psa : wl.status().admission().pod_set_assignments()) {
      std::vector<std::string> parts;
      for (const auto& [res, flavor] : psa.flavors()) {
        auto u = psa.resource_usage().find(res);
        parts.push_back(absl::StrCat(res, "=", u == psa.resource_usage().end() ? "?" : u->second,
                                     " in ", flavor));
      }
      std::sort(parts.begin(), parts.end());
      absl::StrAppend(&out, "  pod set ", psa.name(), " (", psa.count(), " pods): ",
                      absl::StrJoin(parts, ", "), "\n");
    }
  }
  if (!resp.pending_reason().empty()) {
    absl::StrAppend(&out, "  pending: ", resp.pending_reason(), ": ", resp.pending_message(), "\n");
  }
  if (resp.has_position()) {
    const v1::PendingPosition& p = resp.position();
    absl::StrAppend(&out, "  waits: ", p.status(), ", position ", p.position_in_cluster_queue(),
                    " in its ClusterQueue, ", p.position_in_local_queue(), " in its LocalQueue\n");
  }
  if (resp.has_explanation()) {
    const v1::Explanation& e = resp.explanation();
    absl::StrAppend(&out, "  next attempt: ", e.would_admit() ? "would admit" : "would not admit",
                    " (ClusterQueue ", e.cluster_queue(), ", position ", e.queue_position(),
                    " in its queue)\n");
    if (!e.message().empty()) absl::StrAppend(&out, "  ", e.message(), "\n");
    std::vector<std::vector<std::string>> rows = {{"    POD SET", "RESOURCE", "FLAVOR", "MODE", "REASON"}};
    for (const auto& f : e.flavors()) {
      rows.push_back({"    " + f.pod_set(), f.resource(), f.flavor().empty() ? "-" : f.flavor(),
                      f.mode(), f.reason().empty() ? "-" : f.reason()});
    }
    if (rows.size() > 1) out += FormatTable(rows);
    for (const auto& victim : e.would_preempt()) absl::StrAppend(&out, "  would preempt ", victim, "\n");
  }
  return out;
}

std::string AuditLine(const v1::WatchEvent& event) {
  const v1::Event& e = event.event();
  const v1::ObjectReference& about = e.regarding();
  const absl::Time at = absl::FromUnixSeconds(e.event_time().seconds());
  std::string object = about.kind();
  if (!about.name().empty()) {
    absl::StrAppend(&object, "/", about.namespace_().empty() ? "" : about.namespace_() + "/",
                    about.name());
  }
  return absl::StrCat(event.revision(), "  ",
                      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", at, absl::UTCTimeZone()), "  ",
                      e.user(), "  ", e.reason(), "  ", object, "  ", e.note());
}

std::string EventLine(const v1::WatchEvent& event) {
  if (event.type() == v1::WatchEvent::SYNCED) {
    return absl::StrCat(event.revision(), "  SYNCED (replay done; live events follow)");
  }
  if (event.has_event()) {
    // kubectl's columns: TYPE REASON OBJECT MESSAGE, after the time and revision.
    const v1::Event& e = event.event();
    const absl::Time at = absl::FromUnixSeconds(e.event_time().seconds());
    // The object as kubectl names it: its kind in lower case (a Workload's events are the most,
    // and the only ones without a kind), its namespace when it has one, its name.
    const v1::ObjectReference& about = e.regarding();
    std::string object = absl::AsciiStrToLower(about.kind().empty() ? "Workload" : about.kind());
    absl::StrAppend(&object, "/", about.namespace_(), about.namespace_().empty() ? "" : "/",
                    about.name());
    return absl::StrCat(event.revision(), "  ",
                        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", at, absl::UTCTimeZone()), "  ",
                        e.type(), "  ", e.reason(), "  ", object, "  ", e.note());
  }
  std::string what;
  if (event.has_workload()) {
    const auto& m = event.workload().metadata();
    what = absl::StrCat("workload ", m.namespace_(), "/", m.name(), " ", StateName(event.workload()));
  } else {
    what = absl::StrCat(v1::ObjectKind_Name(event.kind()), " ", ObjectName(event.queue_object()));
  }
  std::string line = absl::StrCat(event.revision(), "  ", v1::WatchEvent::Type_Name(event.type()),
                                  "  ", what, "  ", event.reason());
  if (!event.message().empty()) absl::StrAppend(&line, ": ", event.message());
  return line;
}

std::string WorkloadDetail(const v1::Workload& wl) {
  auto annotation = [&](const char* key) {
    auto it = wl.metadata().annotations().find(key);
    return it == wl.metadata().annotations().end() ? std::string("-") : it->second;
  };
  std::vector<std::string> requested;
  for (const v1::PodSet& ps : wl.spec().pod_sets()) {
    requested.push_back(absl::StrCat(ps.name(), "=", ps.count()));
  }
  std::vector<std::string> granted;
  if (wl.status().has_admission()) {
    for (const v1::PodSetAssignment& psa : wl.status().admission().pod_set_assignments()) {
      std::vector<std::string> flavors;
      for (const auto& [resource, flavor] : psa.flavors()) {
        flavors.push_back(absl::StrCat(resource, ":", flavor));
      }
      std::sort(flavors.begin(), flavors.end());
      granted.push_back(absl::StrCat(psa.name(), "=", psa.count(), " (",
                                     absl::StrJoin(flavors, ","), ")"));
    }
  }
  std::string out;
  absl::StrAppend(&out, "uid:              ", wl.metadata().uid().empty() ? "-" : wl.metadata().uid(), "\n");
  absl::StrAppend(&out, "elastic:          ", annotation("kueue.x-k8s.io/elastic-job") == "true" ? "yes" : "no", "\n");
  absl::StrAppend(&out, "slice of:         ", annotation("kueue.x-k8s.io/workload-slice-name"), "\n");
  absl::StrAppend(&out, "replacement for:  ",
                  annotation("kueue.x-k8s.io/workload-slice-replacement-for"), "\n");
  absl::StrAppend(&out, "requested counts: ", absl::StrJoin(requested, ", "), "\n");
  absl::StrAppend(&out, "granted counts:   ", granted.empty() ? "-" : absl::StrJoin(granted, ", "), "\n");
  if (const v1::Condition* c = Find(wl, "Finished"); c != nullptr && c->status() == "True") {
    absl::StrAppend(&out, "finished:         ", c->reason(), ": ", c->message(), "\n");
  }
  // waitForPodsReady: readiness and the requeue backoff.
  if (const v1::Condition* c = Find(wl, "PodsReady"); c != nullptr) {
    absl::StrAppend(&out, "pods ready:       ", c->status(), " (", c->reason(), "): ", c->message(),
                    "\n");
  }
  if (wl.status().has_requeue_state()) {
    const v1::RequeueState& rs = wl.status().requeue_state();
    absl::StrAppend(&out, "requeues:         ", rs.count());
    if (rs.has_requeue_at()) {
      absl::StrAppend(&out, ", backing off until ",
                      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ",
                                       absl::FromUnixSeconds(rs.requeue_at().seconds()),
                                       absl::UTCTimeZone()));
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

std::string ResizeReport(const v1::ResizeResponse& resp) {
  std::string outcome = v1::ResizeResponse::Outcome_Name(resp.outcome());
  std::string out = absl::StrCat("outcome: ", outcome, "\n");
  std::vector<std::vector<std::string>> rows = {
      {"NAME", "STATE", "REQUESTED", "GRANTED", "REPLACEMENT FOR"}};
  for (const v1::Workload& wl : resp.workloads()) {
    std::vector<std::string> requested, granted;
    for (const v1::PodSet& ps : wl.spec().pod_sets()) {
      requested.push_back(absl::StrCat(ps.name(), "=", ps.count()));
    }
    for (const v1::PodSetAssignment& psa : wl.status().admission().pod_set_assignments()) {
      granted.push_back(absl::StrCat(psa.name(), "=", psa.count()));
    }
    auto it = wl.metadata().annotations().find("kueue.x-k8s.io/workload-slice-replacement-for");
    rows.push_back({wl.metadata().name(), StateName(wl), absl::StrJoin(requested, ","),
                    granted.empty() ? "-" : absl::StrJoin(granted, ","),
                    it == wl.metadata().annotations().end() ? "-" : it->second});
  }
  return out + FormatTable(rows);
}

}  // namespace admitd::clients
