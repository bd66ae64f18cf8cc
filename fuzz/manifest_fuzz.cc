// Fuzz target: Kueue YAML manifests, as `admitctl apply -f` reads them. The
// input is a YAML file; every manifest it parses to is applied (queue objects)
// or submitted (workloads) to an engine, which validates it. The same text is
// also read as a pod-group-sets annotation.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "admitd/v1/admission_service.pb.h"
#include "common/manifest/manifest.h"
#include "fuzz/engine_driver.h"
#include "google/protobuf/stubs/logging.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using admitd::fuzz::Rpc;
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)admitd::manifest::ParsePodSets(text);
  absl::StatusOr<std::vector<admitd::manifest::Manifest>> manifests =
      admitd::manifest::ParseManifests(text, "fuzz.yaml");
  if (!manifests.ok()) return 0;
  admitd::manifest::SortForApply(&*manifests);
  admitd::fuzz::EngineDriver driver;
  for (const admitd::manifest::Manifest& m : *manifests) {
    if (m.is_workload) {
      admitd::v1::SubmitRequest submit;
      *submit.mutable_workload() = m.workload;
      driver.Call(Rpc::kSubmit, submit.SerializeAsString());
    } else {
      admitd::v1::ApplyRequest apply;
      *apply.mutable_object() = m.object;
      driver.Call(Rpc::kApply, apply.SerializeAsString());
    }
  }
  return 0;
}
