// The base of the in-process API tests: a real AdmitdServer on port 0, its RocksDB store in a
// fresh temporary directory, and gRPC stubs for it.
//
//   class MyTest : public testing::InProcessTest {
//     void SetUp() override { config_.manual_scheduling = true; Start(); }
//   };
#ifndef ADMITD_INTEGRATION_IN_PROCESS_H_
#define ADMITD_INTEGRATION_IN_PROCESS_H_

#include <memory>
#include <string>
#include <vector>

#include "common/testing/wait_for.h"
#include "gtest/gtest.h"
#include "integration/fixtures.h"
#include "server/config.h"
#include "server/server.h"

namespace admitd::testing {

class InProcessTest : public ::testing::Test {
 protected:
  // Listens on port 0, with a fresh data dir (see FreshDataDir).
  InProcessTest();
  // Stops the server and removes the test's data dirs, unless the test failed: then they stay
  // for a look, and their paths are printed.
  void TearDown() override;

  // Points config_ at a new empty data dir named after the test suite. A directory left by an
  // earlier process with the same pid is removed: it would be recovered as the starting state.
  void FreshDataDir();
  // Starts the server on config_ (stopping a running one first) and connects client_.
  void Start();
  // Shuts the server down, if running; the data dir stays.
  void Stop();
  // Stops the server and starts it again on the same data dir, as after a crash-free restart.
  void Restart() { Start(); }

  // QueueService.Apply, which must succeed.
  void Apply(const v1::ApplyRequest& request);
  // AdmissionService.Get, which is expected to succeed (an empty Workload otherwise).
  v1::Workload Get(const std::string& name, const std::string& ns = "ns");

  Config config_;
  std::unique_ptr<AdmitdServer> server_;
  std::unique_ptr<Client> client_;

 private:
  std::vector<std::string> data_dirs_;  // every one FreshDataDir made
};

}  // namespace admitd::testing

#endif  // ADMITD_INTEGRATION_IN_PROCESS_H_
