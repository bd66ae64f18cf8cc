// Fuzz target: pod reports and pod-group declarations. The input is a sequence
// of records (fuzz/records.h), each payload a ReportPodsRequest. The first
// record's selector sets the pod options (roles per group, fast quota release,
// the workload-identifier gate). Every pod goes through the pure pod functions
// a report runs (the webhook's validation, the pod-group-sets declaration, the
// group's total count, composing each group's Workload); then the request goes
// through the engine's ReportPods, with scheduling cycles after it, as the
// server runs it.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "admitd/v1/pod_service.pb.h"
#include "fuzz/engine_driver.h"
#include "fuzz/records.h"
#include "google/protobuf/stubs/logging.h"
#include "server/pods/pod_group.h"

namespace {

using admitd::fuzz::Rpc;
namespace pods = admitd::pods;
namespace v1 = admitd::v1;

pods::PodOptions OptionsFrom(uint8_t selector) {
  pods::PodOptions options;
  options.max_roles = 1 + selector % pods::kMaxRolesLimit;
  options.fast_quota_release = (selector & 0x40) != 0;
  options.workload_identifier_annotations = (selector & 0x80) != 0;
  return options;
}

void RunPureFunctions(const v1::ReportPodsRequest& request, const pods::PodOptions& options) {
  std::map<std::string, std::vector<v1::PodObservation>> groups;
  for (const v1::PodObservation& pod : request.pods()) {
    (void)pods::ValidatePodCreate(pod, options);
    (void)pods::GroupTotalCount(pod, options);
    if (pods::DeclaresSets(pod)) {
      absl::StatusOr<pods::DeclaredSets> declared = pods::ParseDeclaredSets(pod, options);
      if (declared.ok()) {
        (void)declared->Total();
        (void)pods::RoleResolver::ForDeclaration(*declared).RoleOf(pod);
      }
    }
    const std::string group = pods::GroupName(pod, options);
    if (!group.empty()) groups[group].push_back(pod);
  }
  for (auto& [name, members] : groups) {
    pods::GroupComposition composition = pods::ComposeGroup(members, options);
    if (composition.workload.has_value()) admitd::fuzz::CheckWireRoundTrip(*composition.workload);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<admitd::fuzz::Record> records = admitd::fuzz::SplitRecords(data, size);
  if (records.empty()) return 0;
  const pods::PodOptions options = OptionsFrom(records.front().selector);
  admitd::engine::EngineOptions engine_options;
  engine_options.pod_group_max_roles = options.max_roles;
  engine_options.pod_fast_quota_release = options.fast_quota_release;
  admitd::fuzz::EngineDriver driver(engine_options);
  for (const admitd::fuzz::Record& r : records) {
    v1::ReportPodsRequest request;
    if (!request.ParseFromArray(r.payload.data(), static_cast<int>(r.payload.size()))) continue;
    RunPureFunctions(request, options);
    driver.Call(Rpc::kReportPods, r.payload);
    // Odd selectors also step the scheduler and the clock, so reserved groups
    // can finish.
    if (r.selector & 1) {
      v1::RunSchedulingCyclesRequest cycles;
      cycles.set_count(1);
      driver.Call(Rpc::kRunSchedulingCycles, cycles.SerializeAsString());
    }
  }
  return 0;
}
