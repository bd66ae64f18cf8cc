// The real admitd binary under far more Submits than it takes at once (--max-pending-calls): an
// async generator offers them as fast as it can with many in flight; admitd refuses the excess
// with RESOURCE_EXHAUSTED and a RetryInfo, the generator sends a refused call again after the
// advised delay, and in the end every Submit was acknowledged and stored exactly once, no refused
// call was run (the retry of a refused Submit creates its workload), reads kept being answered,
// and admitd's peak RSS stayed under a bound its configuration sets. Scheduling is manual, so
// that storing the Submits is admitd's only work: the bound under test is on calls, not cycles.
//
//   overload_test [--submits N] [--max-pending-calls N] [--in-flight N] [--max-rss-mib N]
//                 [--admitd PATH] [gtest flags]
//
// The defaults are the CTest run's: 200,000 Submits, 20,000 in flight, a bound of 1,000 (and
// admitd's default --max-concurrent-streams, 2,048).
#include <grpcpp/alarm.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "clients/client.h"
#include "common/raw_http_client.h"
#include "gtest/gtest.h"
#include "integration/fixtures.h"

#ifndef ADMITD_BINARY
#error "ADMITD_BINARY must name the admitd executable"
#endif

namespace admitd {
namespace {

using testing::Client;
using testing::Process;

struct Flags {
  int64_t submits = 200000;
  int64_t max_pending_calls = 1000;
  int64_t in_flight = 20000;
  // 0: MaxRssMib(submits).
  int64_t max_rss_mib = 0;
  std::string admitd = ADMITD_BINARY;
};
Flags g_flags;

// What admitd's peak RSS may reach. Stored one-pod workloads cost what they cost however they
// arrive: submitted at a pace admitd keeps up with (500 in flight, no refusals), its peak was
// 143, 465 and 852 MiB for 20,000, 100,000 and 200,000 of them, ~64 MiB plus ~4 KiB each. The
// flood may add what the bounds let in: 2,048 open streams on the generator's connection at
// ~30 KiB (gRPC's call arena, the request) and 1,000 calls waiting for the sequencer, ~75 MiB,
// given 192 MiB with the allocator's slack (measured: +66, +105 and +91 MiB). Without the bounds
// the same floods peaked at ~430 MiB (20,000) and 1,621 MiB (200,000), well above. (With
// jemalloc and common/allocator_config.cc's settings: 867 MiB paced and 880–902 MiB flooded for
// 200,000; with jemalloc's default ten-second decay the flood reached 987–1,064 MiB.)
int64_t MaxRssMib(int64_t submits) { return 64 + submits * 4 / 1024 + 192; }

// A TCP port nobody listens on now.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// The value of the series `series` (name and labels, as exposed) in `metrics`, or -1.
double Sample(const std::string& metrics, const std::string& series) {
  const std::string prefix = series + " ";
  for (size_t at = 0; at < metrics.size();) {
    size_t end = metrics.find('\n', at);
    if (end == std::string::npos) end = metrics.size();
    if (metrics.compare(at, prefix.size(), prefix) == 0) {
      double value = -1;
      return absl::SimpleAtod(metrics.substr(at + prefix.size(), end - at - prefix.size()), &value)
                 ? value
                 : -1;
    }
    at = end + 1;
  }
  return -1;
}

// Offers `total` Submits with up to `in_flight` at once, sends a refused one again after the
// advised delay (and up to half as long again), and keeps what every call ended with.
class Generator {
 public:
  Generator(std::shared_ptr<grpc::Channel> channel, int64_t total, int64_t in_flight)
      : stub_(v1::AdmissionService::NewStub(std::move(channel))),
        total_(total),
        max_in_flight_(in_flight),
        acknowledged_(static_cast<size_t>(total)),
        deadline_(absl::Now() + absl::Seconds(100)) {
    for (auto& a : acknowledged_) a.store(0);
  }

  void Run() {
    for (int64_t i = 0; i < total_; ++i) {
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](Generator* g) ABSL_EXCLUSIVE_LOCKS_REQUIRED(g->mu_) {
              return g->in_flight_ < g->max_in_flight_;
            },
            this));
        ++in_flight_;
      }
      v1::SubmitRequest req;
      *req.mutable_workload() =
          testing::Workload("ns", absl::StrCat("w-", i), "lq", 1, {{"cpu", "1"}});
      Send(i, std::move(req));
    }
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](Generator* g) ABSL_EXCLUSIVE_LOCKS_REQUIRED(g->mu_) { return g->in_flight_ == 0; },
        this));
  }

  // 1: acknowledged and created; 2: acknowledged but already there; 0: not acknowledged.
  int Acknowledged(int64_t i) const { return acknowledged_[static_cast<size_t>(i)].load(); }
  int64_t refusals() const { return refusals_.load(); }
  int64_t bad_refusals() const { return bad_refusals_.load(); }
  int64_t errors() const { return errors_.load(); }
  std::string first_error() const {
    absl::MutexLock lock(&mu_);
    return first_error_;
  }
  absl::Duration min_delay() const {
    absl::MutexLock lock(&mu_);
    return min_delay_;
  }
  absl::Duration max_delay() const {
    absl::MutexLock lock(&mu_);
    return max_delay_;
  }

 private:
  struct Attempt {
    grpc::ClientContext ctx;
    v1::SubmitRequest req;
    v1::SubmitResponse resp;
  };

  void Send(int64_t i, v1::SubmitRequest req) {
    auto* attempt = new Attempt;
    attempt->ctx.set_deadline(absl::ToChronoTime(deadline_));
    attempt->req = std::move(req);
    stub_->async()->Submit(&attempt->ctx, &attempt->req, &attempt->resp,
                           [this, i, attempt](grpc::Status status) { Done(i, attempt, status); });
  }

  void Done(int64_t i, Attempt* attempt, const grpc::Status& status) {
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      refusals_.fetch_add(1);
      std::optional<absl::Duration> delay = clients::RetryDelayOf(status);
      if (!delay || testing::ErrorReason(status) != "OVERLOADED") {
        bad_refusals_.fetch_add(1);
        Failed(status);
      } else {
        {
          absl::MutexLock lock(&mu_);
          min_delay_ = std::min(min_delay_, *delay);
          max_delay_ = std::max(max_delay_, *delay);
        }
        thread_local std::minstd_rand random{std::random_device{}()};
        const absl::Duration wait =
            *delay + *delay * std::uniform_real_distribution<double>(0, 0.5)(random);
        auto* alarm = new grpc::Alarm;
        v1::SubmitRequest req = std::move(attempt->req);
        delete attempt;
        alarm->Set(absl::ToChronoTime(absl::Now() + wait),
                   [this, i, alarm, req = std::move(req)](bool) mutable {
                     Send(i, std::move(req));
                     delete alarm;
                   });
        return;
      }
    } else if (status.ok()) {
      acknowledged_[static_cast<size_t>(i)].store(attempt->resp.created() ? 1 : 2);
    } else {
      Failed(status);
    }
    delete attempt;
    absl::MutexLock lock(&mu_);
    --in_flight_;
  }

  void Failed(const grpc::Status& status) {
    if (errors_.fetch_add(1) == 0) {
      absl::MutexLock lock(&mu_);
      first_error_ = clients::DescribeError(status);
    }
  }

  std::unique_ptr<v1::AdmissionService::Stub> stub_;
  const int64_t total_;
  const int64_t max_in_flight_;
  std::vector<std::atomic<int>> acknowledged_;
  const absl::Time deadline_;
  std::atomic<int64_t> refusals_{0};
  std::atomic<int64_t> bad_refusals_{0};
  std::atomic<int64_t> errors_{0};

  mutable absl::Mutex mu_;
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  std::string first_error_ ABSL_GUARDED_BY(mu_);
  absl::Duration min_delay_ ABSL_GUARDED_BY(mu_) = absl::InfiniteDuration();
  absl::Duration max_delay_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
};

void Apply(Client& client, const v1::ApplyRequest& req) {
  grpc::ClientContext ctx;
  v1::ApplyResponse resp;
  grpc::Status s = client.queues->Apply(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
}

TEST(OverloadTest, ExcessSubmitsAreRefusedRetriedAndStoredOnce) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/overload_test_", getpid());
  const int metrics_port = FreePort();
  auto started = Process::Start(
      g_flags.admitd, dir,
      {"--manual-scheduling", "--max-pending-calls", absl::StrCat(g_flags.max_pending_calls),
       "--metrics-listen", absl::StrCat("127.0.0.1:", metrics_port)});
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<Process> admitd = *std::move(started);
  Client client(admitd->address());
  Apply(client, testing::Flavor("rf"));
  // Room for every workload: admission never waits for quota.
  Apply(client, testing::ClusterQueue("cq", {"rf"}, {{"cpu", "100000000"}}));
  Apply(client, testing::LocalQueue("ns", "lq", "cq"));

  // Reads go through the sequencer too, and must keep being answered while writes are refused.
  std::atomic<bool> flooding{true};
  std::atomic<int64_t> reads{0}, reads_refused{0};
  std::thread reader([&] {
    Client reading(admitd->address());
    while (flooding.load()) {
      grpc::ClientContext ctx;
      ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
      v1::ListObjectsRequest req;
      req.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
      v1::ListObjectsResponse resp;
      grpc::Status s = reading.queues->List(&ctx, req, &resp);
      (s.ok() ? reads : reads_refused).fetch_add(1);
      absl::SleepFor(absl::Milliseconds(20));
    }
  });

  const absl::Time start = absl::Now();
  Generator generator(client.channel, g_flags.submits, g_flags.in_flight);
  generator.Run();
  const absl::Duration took = absl::Now() - start;
  flooding = false;
  reader.join();
  const int64_t peak_kib = testing::PeakRssKib(admitd->pid());

  std::printf("%lld Submits in %s (%.0f/s), %lld in flight at most, max-pending-calls %lld: "
              "%lld refused and retried (advised %s .. %s), admitd peak RSS %lld MiB (bound %lld); "
              "%lld reads answered during the flood\n",
              static_cast<long long>(g_flags.submits), absl::FormatDuration(took).c_str(),
              static_cast<double>(g_flags.submits) / absl::ToDoubleSeconds(took),
              static_cast<long long>(g_flags.in_flight),
              static_cast<long long>(g_flags.max_pending_calls),
              static_cast<long long>(generator.refusals()),
              absl::FormatDuration(generator.min_delay()).c_str(),
              absl::FormatDuration(generator.max_delay()).c_str(),
              static_cast<long long>(peak_kib / 1024),
              static_cast<long long>(g_flags.max_rss_mib > 0 ? g_flags.max_rss_mib
                                                             : MaxRssMib(g_flags.submits)),
              static_cast<long long>(reads.load()));

  EXPECT_EQ(generator.errors(), 0) << generator.first_error();
  EXPECT_EQ(generator.bad_refusals(), 0);
  // The bound was hit, and every refusal advised a delay within the documented range.
  EXPECT_GT(generator.refusals(), 0);
  if (generator.refusals() > 0) {
    EXPECT_GE(generator.min_delay(), absl::Milliseconds(20));
    EXPECT_LE(generator.max_delay(), absl::Seconds(10));
  }
  EXPECT_EQ(reads_refused.load(), 0);
  const int64_t max_rss_mib =
      g_flags.max_rss_mib > 0 ? g_flags.max_rss_mib : MaxRssMib(g_flags.submits);
  EXPECT_GT(peak_kib, 0);
  EXPECT_LT(peak_kib, max_rss_mib * 1024)
      << "admitd's peak RSS " << peak_kib / 1024 << " MiB, bound " << max_rss_mib << " MiB";

  // Every Submit was acknowledged, and each by the call that created its workload: no refused
  // attempt had stored it.
  int64_t acknowledged = 0, created = 0;
  for (int64_t i = 0; i < g_flags.submits; ++i) {
    acknowledged += generator.Acknowledged(i) != 0;
    created += generator.Acknowledged(i) == 1;
  }
  EXPECT_EQ(acknowledged, g_flags.submits);
  EXPECT_EQ(created, g_flags.submits);

  // ... and stored, each once.
  absl::StatusOr<std::vector<v1::Workload>> listed = testing::ListWorkloads(client, "ns");
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::vector<bool> seen(static_cast<size_t>(g_flags.submits), false);
  int64_t unexpected = 0;
  for (const v1::Workload& wl : *listed) {
    int64_t i = -1;
    const std::string& name = wl.metadata().name();
    if (name.rfind("w-", 0) != 0 || !absl::SimpleAtoi(name.substr(2), &i) || i < 0 ||
        i >= g_flags.submits || seen[static_cast<size_t>(i)]) {
      ++unexpected;
      continue;
    }
    seen[static_cast<size_t>(i)] = true;
  }
  EXPECT_EQ(unexpected, 0);
  EXPECT_EQ(static_cast<int64_t>(listed->size()), g_flags.submits);

  // The refusals were counted where operators see them.
  RawHttpClient http(metrics_port);
  http.Send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string metrics = http.ReadUntilClosed(absl::Seconds(10));
  EXPECT_EQ(Sample(metrics, "admitd_overload_refused_total{method=\"AdmissionService/Submit\"}"),
            static_cast<double>(generator.refusals()));
  EXPECT_EQ(Sample(metrics, "admitd_pending_calls_limit"),
            static_cast<double>(g_flags.max_pending_calls));
  EXPECT_EQ(Sample(metrics, "admitd_pending_calls"), 0);
  admitd->Kill(SIGTERM);
}

}  // namespace
}  // namespace admitd

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    }
    if (name == "--admitd") {
      admitd::g_flags.admitd = value;
      continue;
    }
    int64_t* target = name == "--submits"             ? &admitd::g_flags.submits
                      : name == "--max-pending-calls" ? &admitd::g_flags.max_pending_calls
                      : name == "--in-flight"         ? &admitd::g_flags.in_flight
                      : name == "--max-rss-mib"       ? &admitd::g_flags.max_rss_mib
                                                      : nullptr;
    if (target == nullptr || !absl::SimpleAtoi(value, target)) {
      std::fprintf(stderr, "overload_test: unknown or bad flag %s\n", arg.c_str());
      return 2;
    }
  }
  return RUN_ALL_TESTS();
}
