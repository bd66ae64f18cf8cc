// The C++ client library: a connection to admitd with both service stubs, readable errors that
// include the google.rpc details (field violations, reasons) the server sends, and retries of the
// calls the server refused without running them (an overloaded admitd, one shutting down).
//
//   admitd::clients::Client client("localhost:50051");
//   grpc::ClientContext ctx;
//   grpc::Status s = client.admission().Submit(&ctx, request, &response);
//   if (!s.ok()) std::cerr << admitd::clients::DescribeError(s);
//
//   s = CallWithRetry([&](grpc::ClientContext* ctx) {
//     return client.admission().Submit(ctx, request, &response);
//   });
//
// Thread safety: a Client may be shared by threads (gRPC stubs are thread-safe).
#ifndef ADMITD_CLIENTS_CLIENT_H_
#define ADMITD_CLIENTS_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"

#include "admitd/v1/admission_service.grpc.pb.h"
#include "admitd/v1/pod_service.grpc.pb.h"
#include "admitd/v1/queue_service.grpc.pb.h"

namespace admitd::clients {

class Client {
 public:
  // Plaintext to `target`.
  explicit Client(const std::string& target);
  // Over a channel made by Connect (common/connection.h), TLS and tokens included.
  explicit Client(std::shared_ptr<grpc::Channel> channel);
  v1::QueueService::Stub& queues() { return *queues_; }
  v1::AdmissionService::Stub& admission() { return *admission_; }
  v1::PodService::Stub& pods() { return *pods_; }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::QueueService::Stub> queues_;
  std::unique_ptr<v1::AdmissionService::Stub> admission_;
  std::unique_ptr<v1::PodService::Stub> pods_;
};

// "CODE: message" plus one "  - field: description" line per violation, the reason and the
// advised retry delay.
std::string DescribeError(const grpc::Status& status);

// The delay the server advises before a retry (a google.rpc.RetryInfo in the status details);
// nullopt when it sent none. admitd sends one only with a call it refused without running it:
// RESOURCE_EXHAUSTED when too many calls wait (reason OVERLOADED), UNAVAILABLE while it starts
// or shuts down.
std::optional<absl::Duration> RetryDelayOf(const grpc::Status& status);

// `delay` and up to half as long again at random: when to retry a refused call, so that calls
// refused together do not all come back together.
absl::Duration WithJitter(absl::Duration delay);

// Whether `status` is such a refusal: RESOURCE_EXHAUSTED or UNAVAILABLE carrying a RetryInfo.
// Retrying it cannot run the call twice.
bool RefusedWithRetry(const grpc::Status& status);

struct RetryOptions {
  // Attempts at most, the first included.
  int max_attempts = 10;
  // For all attempts together (each attempt's deadline is what is left of it).
  absl::Duration timeout = absl::Seconds(30);
  // Waits between attempts: the server's advice, or at least this doubling from one refusal to
  // the next up to max_backoff, whichever is longer; then up to half as long again at random.
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(5);
  // Called with every attempt's fresh context (e.g. to add metadata); may be empty.
  std::function<void(grpc::ClientContext*)> prepare;
};

// Calls `call` with a fresh context until it returns anything but a refusal RefusedWithRetry
// accepts, or the attempts or the time run out (then the last refusal is returned).
grpc::Status CallWithRetry(const std::function<grpc::Status(grpc::ClientContext*)>& call,
                           const RetryOptions& options = {});

}  // namespace admitd::clients

#endif  // ADMITD_CLIENTS_CLIENT_H_
