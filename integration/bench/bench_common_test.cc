// ThreadUseByName and Difference: a process's threads read from /proc, summed by name.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "gtest/gtest.h"
#include "integration/bench/bench_common.h"

namespace admitd::bench {
namespace thread_use_test {

// Spins until `stop`, so that its thread has CPU time to show.
void Spin(const std::atomic<bool>& stop) {
  volatile uint64_t n = 0;
  while (!stop.load(std::memory_order_relaxed)) n = n + 1;
}

TEST(ThreadUseByName, SumsThreadsOfOneNameAndTheirCpu) {
  std::atomic<bool> stop{false};
  std::atomic<int> named{0};
  auto worker = [&] {
    pthread_setname_np(pthread_self(), "use-test-spin");
    named.fetch_add(1);
    Spin(stop);
  };
  const ThreadUses before = ThreadUseByName(getpid());
  EXPECT_EQ(before.count("use-test-spin"), 0u);
  std::thread a(worker), b(worker);
  while (named.load() < 2) std::this_thread::yield();
  // Until both have at least a clock tick of CPU (10 ms at the usual 100 Hz).
  ThreadUses during;
  for (int i = 0; i < 500; ++i) {
    during = ThreadUseByName(getpid());
    if (during["use-test-spin"].cpu_s >= 0.05) break;
    usleep(10000);
  }
  stop = true;
  a.join();
  b.join();
  ASSERT_EQ(during.count("use-test-spin"), 1u) << "two threads of one name make one entry";
  EXPECT_GE(during["use-test-spin"].cpu_s, 0.05);

  const ThreadUses diff = Difference(before, during);
  // The spinning threads were not there before: they count from zero.
  EXPECT_DOUBLE_EQ(diff.at("use-test-spin").cpu_s, during.at("use-test-spin").cpu_s);
  for (const auto& [name, use] : diff) {
    if (before.count(name) == 0) continue;
    EXPECT_DOUBLE_EQ(use.cpu_s, during.at(name).cpu_s - before.at(name).cpu_s) << name;
    EXPECT_EQ(use.voluntary, during.at(name).voluntary - before.at(name).voluntary) << name;
  }
}

TEST(ThreadUseByName, NoProcessNoThreads) {
  // Pid 0 has no /proc entry: nothing, rather than an error.
  EXPECT_TRUE(ThreadUseByName(0).empty());
}

}  // namespace thread_use_test
}  // namespace admitd::bench
