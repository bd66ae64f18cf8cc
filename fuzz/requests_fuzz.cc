// Fuzz target: every RPC that reaches the engine, with arbitrary bytes as its
// request. The input is a sequence of records (fuzz/records.h): the selector
// picks the RPC (fuzz/engine_driver.h's Rpc order), the payload is parsed as
// that RPC's request proto. Each request goes through the service's checks and
// the engine, against an engine that starts with a flavor, a ClusterQueue and
// a LocalQueue; every answer and watch event must survive the wire.
#include <cstddef>
#include <cstdint>

#include "fuzz/engine_driver.h"
#include "fuzz/records.h"
#include "google/protobuf/stubs/logging.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // parse failures are expected, and slow to log
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using admitd::fuzz::Rpc;
  admitd::fuzz::EngineDriver driver;
  for (const admitd::fuzz::Record& r : admitd::fuzz::SplitRecords(data, size)) {
    driver.Call(static_cast<Rpc>(r.selector % static_cast<uint8_t>(Rpc::kCount)), r.payload);
  }
  return 0;
}
