// The C++ client library: a connection to admitd with both service stubs, and readable errors
// that include the google.rpc details (field violations, reasons) the server sends.
//
//   admitd::clients::Client client("localhost:50051");
//   grpc::ClientContext ctx;
//   grpc::Status s = client.admission().Submit(&ctx, request, &response);
//   if (!s.ok()) std::cerr << admitd::clients::DescribeError(s);
//
// Thread safety: a Client may be shared by threads (gRPC stubs are thread-safe).
#ifndef ADMITD_CLIENTS_CLIENT_H_
#define ADMITD_CLIENTS_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "admitd/v1/admission_service.grpc.pb.h"
#include "admitd/v1/pod_service.grpc.pb.h"
#include "admitd/v1/queue_service.grpc.pb.h"

namespace admitd::clients {

class Client {
 public:
  // Plaintext to `target`.
  explicit Client(const std::string& target);
  // Over a channel made by Connect (clients/connection.h), TLS and tokens included.
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

// "CODE: message" plus one "  - field: description" line per violation and the reason.
std::string DescribeError(const grpc::Status& status);

}  // namespace admitd::clients

#endif  // ADMITD_CLIENTS_CLIENT_H_
