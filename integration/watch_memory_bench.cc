// watch_memory_bench: what one Watch stream that never reads costs the server in memory.
//
//   build/integration/watch_memory_bench [--events 400] [--event-kib 512] [--buffer-bytes 64Mi]
//
// A server runs in process (store in a temporary directory, fsync off). A client opens a Watch
// and never reads it; `--events` workloads, each carrying an annotation of `--event-kib` KiB,
// are submitted. The process's resident memory is printed before, after the submits (the
// watcher's buffer on top of the workloads the engine holds), and after the watcher read what
// its stream still sent (all of it, or up to the cut-off at the buffer's bound) and the stream
// ended.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "integration/fixtures.h"
#include "common/log.h"
#include "server/server.h"

namespace admitd {
namespace {

double RssMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      int64_t kib = 0;
      (void)absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(6, line.size() - 9)), &kib);
      return static_cast<double>(kib) / 1024;
    }
  }
  return 0;
}

int Run(int argc, char** argv) {
  int events = 400, event_kib = 512;
  std::string buffer_bytes = "64Mi";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--events") (void)absl::SimpleAtoi(argv[i + 1], &events);
    if (flag == "--event-kib") (void)absl::SimpleAtoi(argv[i + 1], &event_kib);
    if (flag == "--buffer-bytes") buffer_bytes = argv[i + 1];
  }
  log::SetLevel(log::Level::kWarning);
  bool help = false;
  absl::StatusOr<Config> config = ParseConfig(
      {"--listen", "127.0.0.1:0", "--no-sync", "--watch-buffer-bytes", buffer_bytes, "--data-dir",
       absl::StrCat(std::filesystem::temp_directory_path().string(), "/watch_memory_bench_",
                    getpid())},
      &help);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  auto server = AdmitdServer::Start(*config);
  if (!server.ok()) return 1;
  testing::Client client((*server)->address());
  auto apply = [&](const v1::ApplyRequest& req) {
    grpc::ClientContext ctx;
    v1::ApplyResponse resp;
    return client.queues->Apply(&ctx, req, &resp).ok();
  };
  apply(testing::Flavor("default"));
  apply(testing::ClusterQueue("cq", {"default"}, {{"cpu", "1000000"}}));
  apply(testing::LocalQueue("ns", "lq", "cq"));

  grpc::ClientContext watch_ctx;
  v1::WatchRequest watch;
  auto reader = client.admission->Watch(&watch_ctx, watch);  // never read until the end
  const double before = RssMiB();
  const std::string blob(static_cast<size_t>(event_kib) << 10, 'x');
  for (int i = 0; i < events; ++i) {
    v1::SubmitRequest req;
    *req.mutable_workload() =
        testing::Workload("ns", absl::StrCat("w", i), "lq", 1, {{"cpu", "1"}});
    (*req.mutable_workload()->mutable_metadata()->mutable_annotations())["blob"] = blob;
    grpc::ClientContext ctx;
    v1::SubmitResponse resp;
    if (!client.admission->Submit(&ctx, req, &resp).ok()) return 1;
  }
  const double full = RssMiB();
  // Drain: read what the stream still sends (everything, or up to its cut-off), then end it.
  v1::WatchEvent event;
  int read = 0;
  bool open = true;
  while (read < events + 1 && (open = reader->Read(&event))) ++read;  // +1: the SYNCED marker
  if (open) watch_ctx.TryCancel();  // read everything: the stream would go on
  while (open && reader->Read(&event)) ++read;
  const grpc::Status ended = reader->Finish();
  absl::SleepFor(absl::Seconds(1));  // let the server's side of the stream finish
  const double after = RssMiB();
  std::printf(
      "events=%d event_kib=%d buffer_bytes=%s: rss before=%.0f MiB after submits=%.0f MiB "
      "after the stream ended=%.0f MiB (stream: %d events read, %s)\n",
      events, event_kib, buffer_bytes.c_str(), before, full, after, read,
      ended.error_message().c_str());
  (*server)->Shutdown(absl::Seconds(2));
  std::filesystem::remove_all(config->data_dir);
  return 0;
}

}  // namespace
}  // namespace admitd

int main(int argc, char** argv) { return admitd::Run(argc, argv); }
