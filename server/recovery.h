// Recovery: rebuilding an engine from the store, as admitd does at startup and after a failed
// commit. Every stored object is parsed and loaded into the engine, then the engine finishes its
// restore (queues, usage, timers) at the store's revision, with the stored workloads decoded
// ahead of it on a second thread (DecodeAhead), which ends before RestoreFromStore returns.
//
// Thread safety: none beyond the store's (ForEachObject may run alongside a Commit); the engine
// must not be used by anyone else meanwhile.
//
//   engine::Engine engine(options);
//   uint64_t objects = 0;
//   ADMITD_RETURN_IF_ERROR(RestoreFromStore(*store, &engine, &objects));
#ifndef ADMITD_SERVER_RECOVERY_H_
#define ADMITD_SERVER_RECOVERY_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "server/engine/engine.h"
#include "store/store.h"

namespace admitd {

// Progress reports for callers that time recovery (benchmarks, logs). All optional.
struct RestoreProgress {
  // on_workloads(n) is called after every `every` workloads loaded (0: never).
  uint64_t every = 0;
  std::function<void(uint64_t workloads)> on_workloads;
  // Called once every object is loaded, just before the engine finishes its restore.
  std::function<void(uint64_t objects)> on_loaded;
};

// Loads every stored object into `engine` (counting them in `*objects`) and finishes its
// recovery at the store's revision. DATA_LOSS when a stored value cannot be parsed; the store's
// and the engine's errors otherwise.
absl::Status RestoreFromStore(const store::Store& store, engine::Engine* engine,
                              uint64_t* objects, const RestoreProgress* progress = nullptr);

}  // namespace admitd

#endif  // ADMITD_SERVER_RECOVERY_H_
