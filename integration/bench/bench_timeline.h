// Timing the items of a benchmark phase: when each item passed each step (sent, returned, seen
// in admitd, admitted, done), the spans between two steps, and running an operation over the
// items from a pool of threads.
//
//   Timeline t(n);  ForEach(n, 8, [&](int i) { ...; t.Record(i, sent, now, ""); });
//   std::vector<double> ms = Spans(t, t.sent, t.done);
//
// Thread safety: Timeline's members are guarded by its mutex; Mark and Record from any thread.
#ifndef ADMITD_INTEGRATION_BENCH_BENCH_TIMELINE_H_
#define ADMITD_INTEGRATION_BENCH_BENCH_TIMELINE_H_

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace admitd::bench {

// When each item of a phase passed each step; InfinitePast while it has not.
struct Timeline {
  explicit Timeline(int n)
      : sent(n, absl::InfinitePast()),
        returned(n, absl::InfinitePast()),
        in_admitd(n, absl::InfinitePast()),
        admitted(n, absl::InfinitePast()),
        done(n, absl::InfinitePast()) {}
  // Marks step `slot` of item `i` the first time; counts it in `*count`.
  void Mark(std::vector<absl::Time>& slot, int i, absl::Time t, int* count) {
    absl::MutexLock lock(&mu);
    if (i < 0 || i >= static_cast<int>(slot.size()) || slot[i] != absl::InfinitePast()) return;
    slot[i] = t;
    ++*count;
  }
  // The outcome of item `i`'s create or submit call: `error` is empty when it succeeded.
  void Record(int i, absl::Time sent_at, absl::Time returned_at, const std::string& error) {
    absl::MutexLock lock(&mu);
    sent[i] = sent_at;
    if (error.empty()) {
      returned[i] = returned_at;
      ++n_returned;
    } else {
      ++n_failed;
      if (first_error.empty()) first_error = error;
    }
  }
  absl::Mutex mu;
  std::vector<absl::Time> sent, returned, in_admitd, admitted, done;
  int n_returned = 0, n_failed = 0, n_in_admitd = 0, n_admitted = 0, n_done = 0;
  std::string first_error;
};

// Milliseconds from `from` to `to` for every item that passed both.
inline std::vector<double> Spans(Timeline& t, const std::vector<absl::Time>& from,
                          const std::vector<absl::Time>& to) {
  absl::MutexLock lock(&t.mu);
  std::vector<double> out;
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == absl::InfinitePast() || to[i] == absl::InfinitePast()) continue;
    out.push_back(absl::ToDoubleMilliseconds(to[i] - from[i]));
  }
  return out;
}

// Runs `op(i)` for i in [0, n) on `threads` threads.
inline void ForEach(int n, int threads, const std::function<void(int)>& op) {
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next.fetch_add(1); i < n; i = next.fetch_add(1)) op(i);
    });
  }
  for (std::thread& t : pool) t.join();
}

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_BENCH_TIMELINE_H_
