// HttpEndpoint: a small HTTP/1.1 server (cpp-httplib underneath) for operational endpoints such
// as /metrics and /healthz. Routes are exact paths answered for GET and HEAD; any other path is
// 404 and any other method on a known path is 405. Connections are served by a pool of worker
// threads, so a client that stalls (never finishes its request, never reads the response) holds
// one worker, for at most the read or write timeout, and delays no one while others are free.
// Stop() wakes every connection at once, so it returns promptly whatever the clients do.
//
//   HttpEndpoint::Routes routes;
//   routes["/healthz"] = [] { return HttpReply{200, "text/plain", "ok\n"}; };
//   ADMITD_ASSIGN_OR_RETURN(auto endpoint, HttpEndpoint::Start("127.0.0.1:0", routes));
//   ... GET http://127.0.0.1:<endpoint->port()>/healthz ...
//   endpoint->Stop();  // or let the destructor do it
//
// Thread safety: port() may be called from any thread; Stop() from any thread but a handler's,
// more than once. Handlers run on the worker threads, several at a time.
#ifndef ADMITD_COMMON_HTTP_ENDPOINT_H_
#define ADMITD_COMMON_HTTP_ENDPOINT_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace admitd {

class ServingCertificate;

// What a route answers.
struct HttpReply {
  int status = 200;
  std::string content_type;
  std::string body;
};

struct HttpEndpointOptions {
  // A request's line and headers must arrive within this time from its first byte (and the
  // first byte within this time of connecting): a client that sends half a request is dropped.
  absl::Duration read_timeout = absl::Seconds(5);
  // The longest wait for a client to take more of a response before it is dropped.
  absl::Duration write_timeout = absl::Seconds(5);
  // How long an idle keep-alive connection waits for its next request, and how many requests
  // one connection may carry before the server closes it.
  absl::Duration keep_alive_timeout = absl::Seconds(5);
  int keep_alive_max_requests = 100;
  // Connections served at once; further connections wait for a free worker. So many clients
  // stalling at once delay others' requests by up to the read timeout.
  int workers = 8;
  // Serve HTTPS with this certificate (and, when it has a client CA, verify client
  // certificates); null: plain HTTP.
  std::shared_ptr<ServingCertificate> tls;
};

class HttpEndpoint {
 public:
  // Exact path -> handler.
  using Routes = std::map<std::string, std::function<HttpReply()>>;

  // Listens on "host:port" ("[v6addr]:port" for IPv6; an empty host is every IPv4 address;
  // port 0 picks a free one) and serves `routes` until Stop(). Errors: INVALID_ARGUMENT when the
  // address is not host:port, UNAVAILABLE when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpEndpoint>> Start(const std::string& address,
                                                             Routes routes,
                                                             HttpEndpointOptions options = {});
  ~HttpEndpoint();  // Stop()

  // The bound port (the one chosen when the address asked for port 0).
  int port() const { return port_; }

  // Closes the listening socket and every open connection (a response being written is cut
  // off), then waits for the worker threads to finish their handlers. Idempotent.
  void Stop();

 private:
  class Impl;
  HttpEndpoint() = default;

  // Constant after Start.
  std::unique_ptr<Impl> server_;
  int port_ = 0;
  std::thread listener_;

  absl::Mutex stop_mu_;
  bool stopped_ ABSL_GUARDED_BY(stop_mu_) = false;
};

}  // namespace admitd

#endif  // ADMITD_COMMON_HTTP_ENDPOINT_H_
