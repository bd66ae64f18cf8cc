// Validation of Workloads (validation.h): their metadata, pod sets, requests and totals, and
// MultiKueue's remote job documents.
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/engine/field_checks.h"
#include "server/engine/metadata_validation.h"
#include "server/engine/quantity.h"
#include "server/engine/resources.h"
#include "server/engine/validation.h"

namespace admitd::engine {

Violations ValidateWorkload(const v1::Workload& workload, int max_pod_sets,
                            std::vector<ResourceAmounts>* per_pod) {
  Violations out;
  if (per_pod != nullptr) per_pod->clear();
  const v1::WorkloadSpec& spec = workload.spec();
  CheckName(&out, "metadata.namespace", workload.metadata().namespace_(), true);
  CheckName(&out, "metadata.name", workload.metadata().name(), false);
  CheckObjectMeta(&out, "metadata", workload.metadata());
  if (workload.spec().has_priority()) CheckPriority(&out, "spec.priority", workload.spec().priority());
  if (spec.queue_name().empty()) {
    out.push_back({"spec.queueName", "Required value: the LocalQueue to queue in"});
  } else {
    CheckName(&out, "spec.queueName", spec.queue_name(), false);
  }
  if (spec.pod_sets().empty()) {
    out.push_back({"spec.podSets", "Required value: at least one pod set"});
  } else if (spec.pod_sets_size() > max_pod_sets) {
    out.push_back({"spec.podSets", absl::StrCat("Too many: ", spec.pod_sets_size(),
                                                ": must have at most ", max_pod_sets, " items")});
  }
  if (spec.has_maximum_execution_time_seconds() && spec.maximum_execution_time_seconds() < 1) {
    out.push_back({"spec.maximumExecutionTimeSeconds",
                   absl::StrCat("Invalid value: ", spec.maximum_execution_time_seconds(),
                                ": must be greater than or equal to 1")});
  }
  std::set<std::string> names;
  int min_counts = 0;
  for (int i = 0; i < spec.pod_sets_size(); ++i) {
    const v1::PodSet& ps = spec.pod_sets(i);
    // The pod set's field path, built only for what there is to report.
    auto f = [i] { return absl::StrCat("spec.podSets[", i, "]"); };
    const std::string name = ps.name().empty() ? "main" : ps.name();
    CheckName(&out, [&] { return f() + ".name"; }, name, true);
    if (!names.insert(name).second) {
      out.push_back({f() + ".name", absl::StrCat("Duplicate value: ", Quote(name))});
    }
    if (ps.count() < 0) {
      out.push_back({f() + ".count", absl::StrCat("Invalid value: ", ps.count(),
                                                ": must be greater than or equal to 0")});
    }
    if (ps.has_min_count()) {
      ++min_counts;
      if (ps.min_count() < 1 || ps.min_count() > ps.count()) {
        out.push_back({f() + ".minCount",
                       absl::StrCat("Invalid value: ", ps.min_count(),
                                    ": must be between 1 and the pod set's count (", ps.count(),
                                    ")")});
      }
    }
    const v1::PodSpec& pod = ps.template_().spec();
    // Field names are built only for what there is to report.
    auto check_container = [&](absl::string_view list, int index, const v1::Container& c) {
      auto cf = [&] { return absl::StrCat(f(), ".template.spec.", list, "[", index, "]"); };
      CheckResourceList(&out, [&] { return cf() + ".resources.requests"; },
                        c.resources().requests());
      CheckResourceList(&out, [&] { return cf() + ".resources.limits"; }, c.resources().limits());
      if (c.resources().requests().count("pods") || c.resources().limits().count("pods")) {
        out.push_back({cf() + ".resources[pods]",
                       "Invalid value: \"pods\": the key is reserved for internal kueue use"});
      }
      if (c.resources().limits().empty()) return;
      // Sorted, so the violations come out in the same order every time (protobuf maps are not).
      const std::map<std::string, std::string> requests(c.resources().requests().begin(),
                                                        c.resources().requests().end());
      for (const auto& [res, text] : requests) {
        auto it = c.resources().limits().find(res);
        if (it == c.resources().limits().end()) continue;
        auto req = ParseQuantity(res, text);
        auto lim = ParseQuantity(res, it->second);
        if (req.ok() && lim.ok() && *req > *lim) {
          out.push_back({absl::StrCat(cf(), ".resources.requests[", res, "]"),
                         absl::StrCat("Invalid value: ", Quote(text),
                                      ": must be less than or equal to ", res, " limit of ",
                                      it->second)});
        }
      }
    };
    for (int c = 0; c < pod.containers_size(); ++c) {
      check_container("containers", c, pod.containers(c));
    }
    for (int c = 0; c < pod.init_containers_size(); ++c) {
      check_container("initContainers", c, pod.init_containers(c));
    }
    CheckResourceList(&out, [&] { return f() + ".template.spec.overhead"; }, pod.overhead());
    CheckResourceList(&out, [&] { return f() + ".template.spec.resources.requests"; },
                      pod.resources().requests());
    CheckResourceList(&out, [&] { return f() + ".template.spec.resources.limits"; },
                      pod.resources().limits());
    if (!pod.tolerations().empty()) {
      CheckTolerations(&out, f() + ".template.spec.tolerations", pod.tolerations());
    }
    if (pod.has_priority()) CheckPriority(&out, f() + ".template.spec.priority", pod.priority());
    if (!ps.template_().labels().empty()) {
      CheckLabels(&out, f() + ".template.labels", ps.template_().labels());
    }
    if (!ps.template_().annotations().empty()) {
      CheckAnnotations(&out, f() + ".template.annotations", ps.template_().annotations());
    }
  }
  if (min_counts > 1) out.push_back({"spec.podSets", "at most one podSet can use minCount"});
  CheckRemoteJobDocument(&out, "remoteJob.manifest", workload.remote_job().manifest());
  CheckRemoteJobDocument(&out, "remoteJob.status", workload.remote_job().status());
  if (out.empty()) {
    for (FieldViolation& v : ValidateWorkloadTotals(spec, per_pod)) out.push_back(std::move(v));
  }
  return out;
}

void CheckRemoteJobDocument(Violations* out, absl::string_view field, const std::string& text) {
  constexpr size_t kMaxBytes = 1 << 20;
  if (text.empty()) return;
  if (text.size() > kMaxBytes) {
    out->push_back({std::string(field), absl::StrCat("Too long: may not be more than ", kMaxBytes, " bytes")});
    return;
  }
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    out->push_back({std::string(field), "Invalid value: must be a JSON object (it does not parse)"});
  } else if (!doc.is_object()) {
    out->push_back({std::string(field), absl::StrCat("Invalid value: must be a JSON object, not ",
                                        doc.type_name())});
  }
}

Violations ValidateWorkloadTotals(const v1::WorkloadSpec& spec,
                                  std::vector<ResourceAmounts>* per_pod) {
  Violations out;
  if (per_pod != nullptr) {
    per_pod->clear();
    per_pod->reserve(spec.pod_sets_size());
  }
  static constexpr absl::string_view largest =
      "the largest quantity is 2^63-1 (9223372036854775807) units";
  ResourceAmounts workload;
  for (int i = 0; i < spec.pod_sets_size(); ++i) {
    const v1::PodSet& ps = spec.pod_sets(i);
    auto f = [i] { return absl::StrCat("spec.podSets[", i, "]"); };  // only for a violation
    ResourceAmounts requests = PodRequestsExact(ps.template_().spec());
    for (const auto& [resource, per_pod] : requests) {
      if (!IsQuantity(per_pod)) {
        out.push_back({f() + ".template.spec",
                       absl::StrCat("Invalid value: the request of one pod for ", resource,
                                    " (", FormatQuantity(resource, per_pod), ") is too large: ",
                                    largest)});
        continue;
      }
      const Amount total = per_pod * ps.count();
      if (!IsQuantity(total)) {
        out.push_back({f() + ".count",
                       absl::StrCat("Invalid value: ", ps.count(), ": ", ps.count(), " pods of ",
                                    FormatQuantity(resource, per_pod), " ", resource, " request ",
                                    FormatQuantity(resource, total), ": ", largest)});
        continue;
      }
      workload[resource] += total;
    }
    if (per_pod != nullptr) per_pod->push_back(std::move(requests));
  }
  for (const auto& [resource, total] : workload) {
    if (out.empty() && !IsQuantity(total)) {
      out.push_back({"spec.podSets",
                     absl::StrCat("Invalid value: the pod sets together request ",
                                  FormatQuantity(resource, total), " ", resource, ": ", largest)});
    }
  }
  if (per_pod != nullptr && !out.empty()) per_pod->clear();
  return out;
}
}  // namespace admitd::engine
