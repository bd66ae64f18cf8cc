// Test-only: the test Kubernetes API server of integration/kube/ (apiserver.py) run as a child
// process on a free port of 127.0.0.1, stopped when the TestCluster is destroyed.
#ifndef ADMITD_CLIENTS_SHIM_KUBE_TEST_CLUSTER_H_
#define ADMITD_CLIENTS_SHIM_KUBE_TEST_CLUSTER_H_

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

extern char** environ;

namespace admitd::shim {

// apiserver.py on 127.0.0.1:<free port>, stopped when destroyed.
class TestCluster {
 public:
  // `bookmark_interval`: seconds between the server's BOOKMARK events on an idle watch.
  // `extra`: more arguments for apiserver.py (e.g. "--crd", "workload").
  explicit TestCluster(const char* bookmark_interval = "0.5",
                       const std::vector<std::string>& extra = {}) {
    int out[2];
    if (pipe(out) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    const std::string script = ADMITD_SOURCE_DIR "/integration/kube/apiserver.py";
    std::vector<std::string> args = {"/usr/bin/python3", script, "--port", "0",
                                     "--bookmark-interval", bookmark_interval};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    FILE* f = fdopen(out[0], "r");
    char line[256] = {0};
    if (f != nullptr && fgets(line, sizeof(line), f) != nullptr) {
      const std::string s(line);  // "listening 127.0.0.1:PORT"
      const size_t colon = s.rfind(':');
      if (s.rfind("listening ", 0) == 0 && colon != std::string::npos) {
        server_ = "http://127.0.0.1:" + s.substr(colon + 1, s.find_last_not_of("\r\n") - colon);
      }
    }
    stdout_ = f;
  }
  ~TestCluster() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    if (stdout_ != nullptr) fclose(stdout_);
  }
  const std::string& server() const { return server_; }

 private:
  pid_t pid_ = -1;
  FILE* stdout_ = nullptr;
  std::string server_;
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_KUBE_TEST_CLUSTER_H_
