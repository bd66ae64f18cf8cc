// What a benchmark that runs other programs needs: a child process with its output in a file
// (stopped, killed and reaped safely from several threads), and what /proc and a /metrics
// endpoint say about processes and the machine (resident memory, TCP counters, one sample).
//
//   std::unique_ptr<Child> c = Child::Spawn("admitd", {"build/server/admitd", ...}, "log");
//   int64_t kib = CurrentRssKib(c->pid());
//
// Thread safety: Child's Stop and Kill may race; the functions are reentrant.
#ifndef ADMITD_INTEGRATION_BENCH_BENCH_PROCESS_H_
#define ADMITD_INTEGRATION_BENCH_BENCH_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

extern char** environ;

namespace admitd::bench {

// The contents of a file ("" when it cannot be read).
std::string ReadFile(const std::string& path);
// VmRSS of a process in KiB, or -1.
int64_t CurrentRssKib(pid_t pid);

// Kernel TCP counters (the whole machine's): connections opened, and SYNs dropped because a
// listen queue was full (each is retried by the client after a second).
struct TcpCounters {
  int64_t active_opens = 0, listen_overflows = 0;
};
TcpCounters ReadTcpCounters();

// The value of the Prometheus sample `name` at `url`, or -1.
double ScrapeMetric(const std::string& url, const std::string& name);
// The text after `key` up to the next space or line end.
std::string FieldAfter(const std::string& text, const std::string& key);

// A child process with stdout and stderr in one file. Stop and Kill may race (the watchdog):
// a process is signalled only until it has been reaped.
class Child {
 public:
  static std::unique_ptr<Child> Spawn(const std::string& name, std::vector<std::string> args,
                                      const std::string& log_path) {
    auto child = std::unique_ptr<Child>(new Child(name, log_path));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) return nullptr;
    child->pid_ = pid;
    return child;
  }

  ~Child() { Stop(absl::Seconds(5)); }

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  std::string Log() const { return ReadFile(log_path_); }

  bool Running() {
    absl::MutexLock lock(&mu_);
    ReapLocked(WNOHANG);
    return !reaped_;
  }

  // SIGTERM, then SIGKILL if it has not exited within `grace`.
  void Stop(absl::Duration grace) {
    Signal(SIGTERM);
    for (absl::Time until = absl::Now() + grace; absl::Now() < until;) {
      if (!Running()) return;
      absl::SleepFor(absl::Milliseconds(20));
    }
    Signal(SIGKILL);
    absl::MutexLock lock(&mu_);
    ReapLocked(0);
  }

  void Signal(int sig) {
    absl::MutexLock lock(&mu_);
    ReapLocked(WNOHANG);
    if (!reaped_) kill(pid_, sig);
  }

  // Waits until the log holds `needle`; the log, or "" when the process exited or time ran out.
  std::string WaitForLog(const std::string& needle, absl::Time deadline) {
    while (absl::Now() < deadline) {
      std::string log = Log();
      if (log.find(needle) != std::string::npos) return log;
      if (!Running()) return "";
      absl::SleepFor(absl::Milliseconds(20));
    }
    return "";
  }

 private:
  Child(std::string name, std::string log_path)
      : name_(std::move(name)), log_path_(std::move(log_path)) {}
  void ReapLocked(int flags) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (reaped_ || pid_ <= 0) {
      reaped_ = true;
      return;
    }
    int status = 0;
    if (waitpid(pid_, &status, flags) == pid_) reaped_ = true;
  }

  const std::string name_;
  const std::string log_path_;
  pid_t pid_ = -1;
  absl::Mutex mu_;
  bool reaped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_BENCH_PROCESS_H_
