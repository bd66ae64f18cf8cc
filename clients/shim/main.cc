// admitd-shim: connects one Kubernetes cluster to admitd. See docs/shim.md and --help.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "clients/shim/shim.h"
#include "clients/shim/shim_config.h"
#include "common/log.h"

namespace {

std::string Env(const char* name) {
  if (const char* v = std::getenv(name); v != nullptr) return v;
  if (std::string(name) == "HOSTNAME") {
    char host[256] = {0};
    if (gethostname(host, sizeof(host) - 1) == 0) return host;
  }
  return "";
}

int Run(int argc, char** argv) {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  bool help = false;
  absl::StatusOr<admitd::shim::ShimConfig> config =
      admitd::shim::ParseShimConfig(std::vector<std::string>(argv + 1, argv + argc), &help, Env);
  if (help) {
    std::fputs(admitd::shim::ShimUsage().c_str(), stdout);
    return 0;
  }
  if (!config.ok()) {
    std::fprintf(stderr, "admitd-shim: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  admitd::log::Level level;
  if (!admitd::log::ParseLevel(config->log_level, &level)) {
    std::fprintf(stderr, "admitd-shim: --log-level: unknown level \"%s\"\n",
                 config->log_level.c_str());
    return 2;
  }
  admitd::log::SetLevel(level);

  // SIGTERM and SIGINT stop the shim cleanly: a thread waits for them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<admitd::shim::Shim>> shim = admitd::shim::Shim::Start(*config);
  if (!shim.ok()) {
    std::fprintf(stderr, "admitd-shim: %s\n", shim.status().ToString().c_str());
    return 1;
  }
  admitd::shim::Shim* s = shim->get();
  std::thread waiter([s, &signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    ADMITD_LOG(kInfo, "stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
    s->Stop();
  });
  waiter.detach();
  const bool lost = s->Wait();
  if (lost) {
    // As Kubernetes controllers do: exit, to be restarted as a follower.
    std::_Exit(1);
  }
  s->Stop();
  shim->reset();
  ADMITD_LOG(kInfo, "stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
