// The load admitd-crashloop runs between kills: the queue objects every round applies, and a
// worker per client thread that drives its own objects through random writes (Submit,
// ReleaseQuota finished or reclaimable, Delete, Import of admitted workloads, Resize of elastic
// jobs, ReportPods for pod groups) and records every answer in its WorkerLedger.
//
//   WorkerLedger ledger = NewWorkerLedger(0, "r1a2b");
//   std::atomic<bool> stop{false};
//   std::atomic<int64_t> acked{0};
//   RunWorker(address, seed, &ledger, &stop, &acked);  // until stop, or the server is gone
//
// Thread safety: RunWorker touches only its own ledger and the two atomics, so one runs per
// thread; ApplyQueues is called from one thread.
#ifndef ADMITD_INTEGRATION_CRASHLOOP_LOAD_H_
#define ADMITD_INTEGRATION_CRASHLOOP_LOAD_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "integration/crashloop/ledger.h"
#include "integration/fixtures.h"

namespace admitd::crashloop {

inline constexpr int kClusterQueues = 3;  // "cq-<i>" in cohort "pool", LocalQueue "crash/lq-<i>"

// Flavors "fa" and "fb", the ClusterQueues in one cohort (cpu and memory in both flavors,
// borrowing allowed) and a LocalQueue each. Idempotent: later rounds find them unchanged.
absl::Status ApplyQueues(testing::Client& client);

// A worker's ledger: its names start with `run` and its number, its pods are in cluster
// "c<worker>", and it drives two elastic jobs.
WorkerLedger NewWorkerLedger(int worker, const std::string& run);

// Writes until `stop` is set or a call finds the server gone (UNAVAILABLE). Adds each
// acknowledged write to `acked` as well as to the ledger.
void RunWorker(const std::string& address, uint64_t seed, WorkerLedger* ledger,
               const std::atomic<bool>* stop, std::atomic<int64_t>* acked);

}  // namespace admitd::crashloop

#endif  // ADMITD_INTEGRATION_CRASHLOOP_LOAD_H_
