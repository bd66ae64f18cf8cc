// client_loop: the C++ client library's side of the client comparison
// (clients/python/bench/submit_wait_bench.py): `--inflight` threads, each in a closed loop of
// Submit (a one-pod Workload of 1m cpu in `--namespace`, queue `--queue`) then Admit with wait
// until it is admitted, against a running admitd, for `--seconds`. Prints one JSON line:
// completed loops, loops per second, and the p50/p99 latency of a loop in ms.
//
//   build/integration/bench/client_loop --server 127.0.0.1:50051 [--inflight 64]
//       [--seconds 5] [--namespace cpp] [--queue lq]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "clients/client.h"

namespace admitd::bench {
namespace {

struct Options {
  std::string server = "127.0.0.1:50051";
  int inflight = 64;
  double seconds = 5;
  std::string ns = "cpp";
  std::string queue = "lq";
};

v1::SubmitRequest Request(const Options& o, int thread, int64_t i) {
  v1::SubmitRequest req;
  v1::Workload* wl = req.mutable_workload();
  wl->mutable_metadata()->set_namespace_(o.ns);
  wl->mutable_metadata()->set_name(absl::StrFormat("c-%03d-%07d", thread, i));
  wl->mutable_spec()->set_queue_name(o.queue);
  v1::PodSet* ps = wl->mutable_spec()->add_pod_sets();
  ps->set_name("main");
  ps->set_count(1);
  v1::Container* c = ps->mutable_template_()->mutable_spec()->add_containers();
  c->set_name("c");
  (*c->mutable_resources()->mutable_requests())["cpu"] = "1m";
  return req;
}

int Run(const Options& o) {
  clients::Client client(o.server);
  const absl::Time end = absl::Now() + absl::Seconds(o.seconds);
  absl::Mutex mu;
  std::vector<double> latencies_ms;
  std::atomic<int64_t> errors{0};
  std::string first_error;
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int t = 0; t < o.inflight; ++t) {
    threads.emplace_back([&, t] {
      std::vector<double> mine;
      for (int64_t i = 0; absl::Now() < end; ++i) {
        const absl::Time begin = absl::Now();
        v1::SubmitResponse submitted;
        grpc::ClientContext submit_ctx;
        submit_ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
        grpc::Status s = client.admission().Submit(&submit_ctx, Request(o, t, i), &submitted);
        v1::AdmitResponse admitted;
        if (s.ok()) {
          v1::AdmitRequest wait;
          wait.set_namespace_(o.ns);
          wait.set_name(submitted.workload().metadata().name());
          wait.set_wait(true);
          wait.mutable_timeout()->set_seconds(30);
          grpc::ClientContext admit_ctx;
          admit_ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(40)));
          s = client.admission().Admit(&admit_ctx, wait, &admitted);
        }
        if (!s.ok() || !admitted.admitted()) {
          if (errors.fetch_add(1) == 0) {
            absl::MutexLock lock(&mu);
            first_error = s.ok() ? "not admitted" : clients::DescribeError(s);
          }
          continue;
        }
        mine.push_back(absl::ToDoubleMilliseconds(absl::Now() - begin));
      }
      absl::MutexLock lock(&mu);
      latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
    });
  }
  for (std::thread& t : threads) t.join();
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
  std::sort(latencies_ms.begin(), latencies_ms.end());
  auto pct = [&](double p) {
    return latencies_ms.empty() ? 0.0
                                : latencies_ms[std::min(latencies_ms.size() - 1,
                                                        static_cast<size_t>(p * latencies_ms.size()))];
  };
  std::printf(
      "{\"client\":\"c++\",\"inflight\":%d,\"completed\":%zu,\"errors\":%lld,\"per_second\":%.1f,"
      "\"p50_ms\":%.2f,\"p99_ms\":%.2f}\n",
      o.inflight, latencies_ms.size(), static_cast<long long>(errors.load()),
      latencies_ms.size() / elapsed, pct(0.50), pct(0.99));
  if (!first_error.empty()) std::fprintf(stderr, "client_loop: first error: %s\n", first_error.c_str());
  return errors.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace admitd::bench

int main(int argc, char** argv) {
  admitd::bench::Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    bool ok = true;
    if (flag == "--server") {
      o.server = value;
    } else if (flag == "--inflight") {
      ok = absl::SimpleAtoi(value, &o.inflight) && o.inflight > 0;
    } else if (flag == "--seconds") {
      ok = absl::SimpleAtod(value, &o.seconds) && o.seconds > 0;
    } else if (flag == "--namespace") {
      o.ns = value;
    } else if (flag == "--queue") {
      o.queue = value;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "usage: client_loop --server ADDR [--inflight N] [--seconds S] "
                           "[--namespace NS] [--queue LQ]\n");
      return 2;
    }
  }
  return admitd::bench::Run(o);
}
