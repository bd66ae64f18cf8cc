// Test fixtures shared by the integration tests and benchmarks: builders for Kueue-shaped
// objects, gRPC stubs for a running admitd, and a Process that runs the real admitd binary.
//
// Thread safety: the builders and readers of workloads are pure functions; a Client may be used
// from several threads at once (gRPC stubs are thread-safe); a Process needs external
// synchronization.
#ifndef ADMITD_INTEGRATION_FIXTURES_H_
#define ADMITD_INTEGRATION_FIXTURES_H_

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "admitd/v1/admission_service.grpc.pb.h"
#include "admitd/v1/queue_service.grpc.pb.h"

namespace admitd::testing {

v1::ApplyRequest Flavor(const std::string& name);
// A ClusterQueue selecting every namespace with one resource group over `resources`
// (resource -> nominal quota) in each flavor of `flavors`, tried in order.
v1::ApplyRequest ClusterQueue(const std::string& name, const std::vector<std::string>& flavors,
                              const std::map<std::string, std::string>& resources,
                              const std::string& strategy = "BestEffortFIFO");
v1::ApplyRequest LocalQueue(const std::string& ns, const std::string& name,
                            const std::string& cluster_queue);
// A workload with one pod set "main" of `count` pods, each requesting `requests`.
v1::Workload Workload(const std::string& ns, const std::string& name, const std::string& queue,
                      int count, const std::map<std::string, std::string>& requests,
                      int priority = 0);
// The workload of elastic Job "job-<j>" (KEP-77): `count` pods of 1 CPU in LocalQueue `queue`,
// the kueue.x-k8s.io/elastic-job annotation, the job-uid label "uid-<j>" and the Job as its
// controller owner.
v1::Workload ElasticJobWorkload(const std::string& ns, int j, int count,
                                const std::string& queue = "lq");
// The Resize a Job's controller sends when Job "job-<j>" (as ElasticJobWorkload makes it) is
// scaled to `count` pods at its metadata.generation `generation`.
v1::ResizeRequest ElasticJobResize(const std::string& ns, int j, int count, int64_t generation);

// Whether the workload's condition `type` has status "True".
bool IsConditionTrue(const v1::Workload& wl, const std::string& type);
// Whether the workload holds quota: reserved, with an admission, not finished (what the server
// charges to its ClusterQueue).
bool HoldsQuota(const v1::Workload& wl);

struct Client {
  explicit Client(const std::string& address);
  explicit Client(std::shared_ptr<grpc::Channel> channel);
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::QueueService::Stub> queues;
  std::unique_ptr<v1::AdmissionService::Stub> admission;
};

// Every workload in `ns` (every namespace when empty), all pages. With `revision`, also the
// revision the list was read at, or 0 when the pages were read at different revisions.
absl::StatusOr<std::vector<v1::Workload>> ListWorkloads(Client& client, const std::string& ns,
                                                        uint64_t* revision = nullptr);

// Reads the google.rpc details of a failed call: "field: description" per violation.
std::vector<std::string> FieldViolations(const grpc::Status& status);
std::string ErrorReason(const grpc::Status& status);

// VmHWM (peak resident memory) of a process in KiB, or -1.
int64_t PeakRssKib(pid_t pid);

// The admitd binary running as a child process, its stderr going to a file.
class Process {
 public:
  // Starts `binary` with --listen 127.0.0.1:0 --data-dir `data_dir` plus `extra_args`, and
  // waits until its log says where it listens (then address() is known) and holds `ready` (an
  // HA follower says msg=following).
  static absl::StatusOr<std::unique_ptr<Process>> Start(const std::string& binary,
                                                        const std::string& data_dir,
                                                        const std::vector<std::string>& extra_args,
                                                        absl::Duration timeout = absl::Seconds(30),
                                                        const std::string& ready = "msg=serving");
  ~Process();
  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  // Sends `signal` and waits for the exit; returns the wait status.
  int Kill(int signal);
  // Waits up to `timeout` for the process to exit by itself; its wait status, or
  // DEADLINE_EXCEEDED while it still runs.
  absl::StatusOr<int> WaitForExit(absl::Duration timeout);
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  std::string address_;
  std::string log_path_;
};

}  // namespace admitd::testing

#endif  // ADMITD_INTEGRATION_FIXTURES_H_
