// The real admitd binary, killed with SIGKILL in the middle of a burst of concurrent Submits:
// after a restart every acknowledged workload is there, and the quota usage is exactly the sum of
// the admitted workloads' usage.
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "integration/exact_quantity.h"
#include "integration/fixtures.h"

#ifndef ADMITD_BINARY
#error "ADMITD_BINARY must name the admitd executable"
#endif

namespace admitd {
namespace {

using testing::Client;
using testing::Process;

// A fresh directory per call (a reused pid must not find an old store).
std::string DataDir(const std::string& suffix = "") {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/crash_test_", getpid(), suffix);
  std::filesystem::remove_all(dir);
  return dir;
}

void Apply(Client& client, const v1::ApplyRequest& req) {
  grpc::ClientContext ctx;
  v1::ApplyResponse resp;
  grpc::Status s = client.queues->Apply(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
}

// A quantity the server answered, exactly (in nano-units); -1 when it is not a quantity.
testing::Nano Exact(const std::string& q) {
  absl::StatusOr<testing::Nano> v = testing::ParseExact(q);
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : -1;
}

std::vector<v1::Workload> ListAll(Client& client) {
  absl::StatusOr<std::vector<v1::Workload>> all = testing::ListWorkloads(client, "ns");
  EXPECT_TRUE(all.ok()) << all.status();
  return all.ok() ? *std::move(all) : std::vector<v1::Workload>{};
}

TEST(CrashTest, AcknowledgedSubmitsSurviveSigkill) {
  const std::string dir = DataDir();
  auto first = Process::Start(ADMITD_BINARY, dir, {});
  ASSERT_TRUE(first.ok()) << first.status();
  std::unique_ptr<Process> process = *std::move(first);
  {
    Client client(process->address());
    Apply(client, testing::Flavor("default"));
    // Room for 150 of the 500m workloads: the rest stays pending.
    Apply(client, testing::ClusterQueue("cq", {"default"}, {{"cpu", "75"}}));
    Apply(client, testing::LocalQueue("ns", "lq", "cq"));
  }

  // 8 clients submit as fast as they can; the server is killed once 300 were acknowledged.
  absl::Mutex mu;
  std::set<std::string> acknowledged;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&, t] {
      Client client(process->address());
      for (int i = 0; !stop.load(); ++i) {
        std::string name = absl::StrCat("w-", t, "-", i);
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        v1::SubmitRequest req;
        *req.mutable_workload() = testing::Workload("ns", name, "lq", 1, {{"cpu", "500m"}});
        v1::SubmitResponse resp;
        if (client.admission->Submit(&ctx, req, &resp).ok()) {
          absl::MutexLock lock(&mu);
          acknowledged.insert(name);
        } else {
          return;  // the server is gone
        }
      }
    });
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline) {
    {
      absl::MutexLock lock(&mu);
      if (acknowledged.size() >= 300) break;
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  int wstatus = process->Kill(SIGKILL);
  EXPECT_TRUE(WIFSIGNALED(wstatus));
  stop = true;
  for (std::thread& t : clients) t.join();
  ASSERT_GE(acknowledged.size(), 300u);

  auto second = Process::Start(ADMITD_BINARY, dir, {});
  ASSERT_TRUE(second.ok()) << second.status();
  process = *std::move(second);
  Client client(process->address());

  std::set<std::string> stored;
  testing::Nano admitted_cpu = 0;
  int admitted = 0;
  for (const v1::Workload& wl : ListAll(client)) {
    stored.insert(wl.metadata().name());
    if (wl.status().has_admission()) {
      ++admitted;
      admitted_cpu +=
          Exact(wl.status().admission().pod_set_assignments(0).resource_usage().at("cpu"));
    }
  }

  for (const std::string& name : acknowledged) {
    EXPECT_TRUE(stored.count(name)) << name << " was acknowledged but is gone";
  }
  // Every stored workload was submitted; at most the ones in flight at the kill were not acked.
  EXPECT_LE(stored.size(), acknowledged.size() + 8);
  EXPECT_EQ(admitted, 150);
  EXPECT_TRUE(admitted_cpu == Exact("75"));

  grpc::ClientContext ctx;
  v1::GetObjectRequest get;
  get.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  get.set_name("cq");
  v1::QueueObject cq;
  ASSERT_TRUE(client.queues->Get(&ctx, get, &cq).ok());
  testing::Nano reserved = -1;
  for (const auto& fu : cq.cluster_queue().status().flavors_reservation()) {
    for (const auto& r : fu.resources()) {
      if (r.name() == "cpu") reserved = Exact(r.total());
    }
  }
  EXPECT_TRUE(reserved == admitted_cpu) << testing::FormatNano(reserved);
  EXPECT_EQ(cq.cluster_queue().status().pending_workloads(), static_cast<int>(stored.size()) - 150);

  // A clean SIGTERM exits 0 after closing the store.
  wstatus = process->Kill(SIGTERM);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << process->Log();
}

testing::Nano ReservedCpu(Client& client) {
  grpc::ClientContext ctx;
  v1::GetObjectRequest get;
  get.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  get.set_name("cq");
  v1::QueueObject cq;
  EXPECT_TRUE(client.queues->Get(&ctx, get, &cq).ok());
  testing::Nano reserved = 0;
  for (const auto& fu : cq.cluster_queue().status().flavors_reservation()) {
    for (const auto& r : fu.resources()) {
      if (r.name() == "cpu") reserved += Exact(r.total());
    }
  }
  return reserved;
}

// Elastic jobs: for every job at most one slice holds quota, the ClusterQueue's reservation is
// the sum of the holders' usage, and every acknowledged scale-up is in a live slice.
void CheckSlices(Client& client, const std::map<std::string, int>& acked_count) {
  std::map<std::string, int> holders, live_max;
  testing::Nano held_cpu = 0;
  int replaced = 0, pending = 0;
  for (const v1::Workload& wl : ListAll(client)) {
    const std::string job = wl.metadata().labels().at("kueue.x-k8s.io/job-uid");
    if (testing::IsConditionTrue(wl, "Finished")) {
      ++replaced;
      continue;
    }
    if (!testing::IsConditionTrue(wl, "QuotaReserved")) ++pending;
    live_max[job] = std::max(live_max[job], wl.spec().pod_sets(0).count());
    if (testing::HoldsQuota(wl)) {
      ++holders[job];
      held_cpu += Exact(wl.status().admission().pod_set_assignments(0).resource_usage().at("cpu"));
    }
  }
  for (const auto& [job, n] : holders) EXPECT_LE(n, 1) << job << " has " << n << " admitted slices";
  for (const auto& [job, count] : acked_count) {
    EXPECT_GE(live_max[job], count) << job << ": an acknowledged resize to " << count << " is lost";
  }
  EXPECT_TRUE(ReservedCpu(client) == held_cpu);
  // The scale-ups replaced slices, and filled the queue so that some wait.
  EXPECT_GT(replaced, 0);
  EXPECT_GT(pending, 0);
}

TEST(CrashTest, ResizesRacingWithSigkillKeepOneAdmittedSlicePerJob) {
  const std::string dir = DataDir("_elastic");
  auto first = Process::Start(ADMITD_BINARY, dir, {});
  ASSERT_TRUE(first.ok()) << first.status();
  std::unique_ptr<Process> process = *std::move(first);
  constexpr int kJobs = 40;
  {
    Client client(process->address());
    Apply(client, testing::Flavor("default"));
    // 40 jobs of 2 pods fit; the scale-ups fill the rest and then wait.
    Apply(client, testing::ClusterQueue("cq", {"default"}, {{"cpu", "150"}}));
    Apply(client, testing::LocalQueue("ns", "lq", "cq"));
    for (int j = 0; j < kJobs; ++j) {
      v1::SubmitRequest req;
      *req.mutable_workload() = testing::ElasticJobWorkload("ns", j, 2);
      grpc::ClientContext ctx;
      v1::SubmitResponse resp;
      grpc::Status s = client.admission->Submit(&ctx, req, &resp);
      ASSERT_TRUE(s.ok()) << s.error_message();
    }
    // Wait until all are admitted.
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    int admitted = 0;
    while (absl::Now() < deadline && admitted < kJobs) {
      admitted = 0;
      for (const v1::Workload& wl : ListAll(client)) {
        admitted += testing::IsConditionTrue(wl, "Admitted") ? 1 : 0;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    ASSERT_EQ(admitted, kJobs);
  }

  // 4 clients scale jobs up one pod at a time; the server is killed after 150 acknowledgements.
  absl::Mutex mu;
  std::map<std::string, int> acked_count;  // job uid -> last acknowledged count
  int acked = 0;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      Client client(process->address());
      std::map<int, int> count, generation;
      for (int i = 0; !stop.load(); ++i) {
        const int j = t + 4 * (i % (kJobs / 4));  // each thread owns its jobs
        if (count[j] == 0) {
          count[j] = 2;
          generation[j] = 1;
        }
        v1::ResizeRequest req = testing::ElasticJobResize("ns", j, count[j] + 1, generation[j] + 1);
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        v1::ResizeResponse resp;
        grpc::Status s = client.admission->Resize(&ctx, req, &resp);
        if (!s.ok()) return;  // the server is gone
        ++count[j];
        ++generation[j];
        absl::MutexLock lock(&mu);
        acked_count[absl::StrCat("uid-", j)] = count[j];
        ++acked;
      }
    });
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline) {
    {
      absl::MutexLock lock(&mu);
      if (acked >= 150) break;
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  int wstatus = process->Kill(SIGKILL);
  EXPECT_TRUE(WIFSIGNALED(wstatus));
  stop = true;
  for (std::thread& t : clients) t.join();
  ASSERT_GE(acked, 150);

  auto second = Process::Start(ADMITD_BINARY, dir, {});
  ASSERT_TRUE(second.ok()) << second.status();
  process = *std::move(second);
  Client client(process->address());
  CheckSlices(client, acked_count);
  // And again once the restarted server has scheduled what was pending.
  absl::SleepFor(absl::Milliseconds(500));
  CheckSlices(client, acked_count);
  wstatus = process->Kill(SIGTERM);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << process->Log();
}

TEST(CrashTest, SecondInstanceOnTheSameDataDirIsRefused) {
  const std::string dir = DataDir("_lock");
  auto first = Process::Start(ADMITD_BINARY, dir, {});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Process::Start(ADMITD_BINARY, dir, {}, absl::Seconds(10));
  ASSERT_FALSE(second.ok());
  EXPECT_NE(std::string(second.status().message()).find("cannot start"), std::string::npos)
      << second.status();
}

}  // namespace
}  // namespace admitd
