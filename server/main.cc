// admitd: the admission server. See README.md for flags and docs/architecture.md for design.
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/strings/str_join.h"
#include "server/config.h"
#include "common/log.h"
#include "server/ha/replica.h"
#include "server/server.h"

namespace {

int Run(int argc, char** argv) {
  // Debian's Abseil is built without NDEBUG, so every Mutex acquisition also feeds Abseil's
  // lock-order graph (deadlock detection), which showed up in profiles of the serving path.
  // The tests keep it on; the server binary does not need it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  std::vector<std::string> args(argv + 1, argv + argc);
  bool help = false;
  absl::StatusOr<admitd::Config> config = admitd::ParseConfig(args, &help);
  if (help) {
    std::fputs(admitd::Usage().c_str(), stdout);
    return 0;
  }
  if (!config.ok()) {
    std::fprintf(stderr, "admitd: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  admitd::log::Level level;
  admitd::log::ParseLevel(config->log_level, &level);
  admitd::log::SetLevel(level);

  // SIGTERM and SIGINT are taken by sigwait below, never delivered asynchronously.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // One replica of an HA group (docs/high-availability.md), or admitd alone.
  std::unique_ptr<admitd::ha::Replica> replica;
  std::unique_ptr<admitd::AdmitdServer> server;
  if (!config->ha_etcd_endpoints.empty()) {
    absl::StatusOr<std::unique_ptr<admitd::ha::Replica>> started =
        admitd::ha::Replica::Start(*config);
    if (!started.ok()) {
      ADMITD_LOG(kError, "cannot start", {{"error", started.status().ToString()}});
      return 1;
    }
    replica = *std::move(started);
  } else {
    absl::StatusOr<std::unique_ptr<admitd::AdmitdServer>> started =
        admitd::AdmitdServer::Start(*config);
    if (!started.ok()) {
      ADMITD_LOG(kError, "cannot start", {{"error", started.status().ToString()}});
      return 1;
    }
    server = *std::move(started);
  }
  int signal = 0;
  sigwait(&signals, &signal);
  ADMITD_LOG(kInfo, "signal received", {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"}});
  if (replica != nullptr) replica->Shutdown(absl::Seconds(10));
  if (server != nullptr) server->Shutdown(absl::Seconds(10));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
