#include "common/http_endpoint.h"

#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/serving_certificate.h"

namespace admitd {
namespace {

constexpr char kTextPlain[] = "text/plain; charset=utf-8";

// Waits until `fd` is ready for `events` (true), or until `deadline` passes or `wake_fd` turns
// readable, i.e. the endpoint is stopping (false). An error or hang-up on `fd` counts as ready:
// the recv or send that follows reports it.
bool WaitFor(int fd, short events, int wake_fd, absl::Time deadline) {
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    const int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1)));
    pollfd fds[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(std::min<int64_t>(ms, INT_MAX)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (fds[1].revents != 0) return false;
    if (fds[0].revents != 0) return true;
  }
}

void FormatAddress(const sockaddr_storage& addr, socklen_t len, std::string* ip, int* port) {
  char host[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof(host), serv,
                  sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return;
  }
  *ip = host;
  if (!absl::SimpleAtoi(serv, port)) *port = -1;
}

// One connection as cpp-httplib's request parser and response writer see it. It replaces
// httplib's own socket stream so that every wait also watches the endpoint's stop event, and
// so that a request's line and headers share one deadline: a client sending a byte now and then
// cannot hold a worker for longer than the read timeout.
//
// With TLS (`ssl` set, the socket non-blocking), the same waits drive OpenSSL's reads and writes.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, int wake_fd, absl::Duration write_timeout, SSL* ssl = nullptr)
      : fd_(fd), wake_fd_(wake_fd), write_timeout_(write_timeout), ssl_(ssl) {}

  // Reads of the next request must be done by `deadline`.
  void set_read_deadline(absl::Time deadline) { read_deadline_ = deadline; }
  // Bytes of a pipelined request already received.
  bool has_buffered_input() const {
    return pos_ < end_ || (ssl_ != nullptr && SSL_has_pending(ssl_) == 1);
  }

  // The TLS handshake, done by `deadline`. False when it fails, times out or the endpoint stops.
  bool Handshake(absl::Time deadline) {
    for (;;) {
      const int r = SSL_accept(ssl_);
      if (r == 1) return true;
      const int error = SSL_get_error(ssl_, r);
      if (error == SSL_ERROR_WANT_READ) {
        if (!WaitFor(fd_, POLLIN, wake_fd_, deadline)) return false;
      } else if (error == SSL_ERROR_WANT_WRITE) {
        if (!WaitFor(fd_, POLLOUT, wake_fd_, deadline)) return false;
      } else {
        ERR_clear_error();
        return false;
      }
    }
  }

  bool is_readable() const override {
    return has_buffered_input() || WaitFor(fd_, POLLIN, wake_fd_, read_deadline_);
  }
  bool is_writable() const override {
    return WaitFor(fd_, POLLOUT, wake_fd_, absl::Now() + write_timeout_);
  }

  ssize_t read(char* ptr, size_t size) override {
    if (ssl_ != nullptr) return ReadTls(ptr, size);
    while (!has_buffered_input()) {
      if (!is_readable()) return -1;
      const ssize_t n = recv(fd_, buf_, sizeof(buf_), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (n <= 0) return n;
      pos_ = 0;
      end_ = static_cast<size_t>(n);
    }
    const size_t taken = std::min(size, end_ - pos_);
    std::memcpy(ptr, buf_ + pos_, taken);
    pos_ += taken;
    return static_cast<ssize_t>(taken);
  }

  // Writes what the socket takes now (at least one byte unless it fails). A client that takes
  // nothing for the write timeout, or a stop, fails the write.
  ssize_t write(const char* ptr, size_t size) override {
    if (ssl_ != nullptr) return WriteTls(ptr, size);
    for (;;) {
      if (!is_writable()) return -1;
      const ssize_t n = send(fd_, ptr, size, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      FormatAddress(addr, len, &ip, &port);
    }
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      FormatAddress(addr, len, &ip, &port);
    }
  }
  socket_t socket() const override { return fd_; }

 private:
  // OpenSSL's want-read and want-write both wait on the socket until `deadline`.
  bool WaitForTls(int result, absl::Time deadline) {
    const int error = SSL_get_error(ssl_, result);
    if (error == SSL_ERROR_WANT_READ) return WaitFor(fd_, POLLIN, wake_fd_, deadline);
    if (error == SSL_ERROR_WANT_WRITE) return WaitFor(fd_, POLLOUT, wake_fd_, deadline);
    ERR_clear_error();
    return false;
  }
  ssize_t ReadTls(char* ptr, size_t size) {
    const int want = static_cast<int>(std::min<size_t>(size, INT_MAX));
    for (;;) {
      const int n = SSL_read(ssl_, ptr, want);
      if (n > 0) return n;
      if (SSL_get_error(ssl_, n) == SSL_ERROR_ZERO_RETURN) return 0;
      if (!WaitForTls(n, read_deadline_)) return -1;
    }
  }
  ssize_t WriteTls(const char* ptr, size_t size) {
    const absl::Time deadline = absl::Now() + write_timeout_;
    const int want = static_cast<int>(std::min<size_t>(size, INT_MAX));
    for (;;) {
      const int n = SSL_write(ssl_, ptr, want);
      if (n > 0) return n;
      if (!WaitForTls(n, deadline)) return -1;
    }
  }

  const int fd_;
  const int wake_fd_;
  const absl::Duration write_timeout_;
  SSL* const ssl_;  // null: plain TCP
  absl::Time read_deadline_ = absl::InfinitePast();
  char buf_[4096];
  size_t pos_ = 0;
  size_t end_ = 0;
};

// "host:port" or "[v6]:port" -> host, port.
bool SplitHostPort(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  if (host->empty()) *host = "0.0.0.0";
  return absl::SimpleAtoi(address.substr(colon + 1), port) && *port >= 0 && *port <= 65535;
}

}  // namespace

// cpp-httplib's server with its connection loop replaced (the extension point its own SSL server
// uses): requests are parsed, routed and answered by the library, over ConnectionStream.
class HttpEndpoint::Impl : public httplib::Server {
 public:
  Impl(const HttpEndpointOptions& options, Routes routes)
      : options_(options),
        routes_(std::move(routes)),
        max_requests_(std::max(1, options.keep_alive_max_requests)) {
    const auto seconds = [](absl::Duration d) {
      return std::max<time_t>(1, absl::ToInt64Seconds(absl::Ceil(d, absl::Seconds(1))));
    };
    // These only shape the Keep-Alive response header and the socket timeouts httplib sets on
    // accepted sockets; ConnectionStream enforces the same limits itself.
    set_keep_alive_max_count(static_cast<size_t>(max_requests_));
    set_keep_alive_timeout(seconds(options.keep_alive_timeout));
    set_read_timeout(seconds(options.read_timeout));
    set_write_timeout(seconds(options.write_timeout));
    // httplib's default sets SO_REUSEPORT, which would let a second server share the port.
    set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    const size_t workers = static_cast<size_t>(std::max(1, options.workers));
    new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
    set_pre_routing_handler(
        [this](const httplib::Request& req, httplib::Response& res) { return Route(req, res); });
  }
  ~Impl() override {
    if (wake_fd_ >= 0) close(wake_fd_);
  }

  bool Init() {
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) return false;
    if (options_.tls != nullptr) {
      tls_ctx_.reset(SSL_CTX_new(TLS_server_method()));
      if (tls_ctx_ == nullptr) return false;
      options_.tls->Install(tls_ctx_.get());
    }
    return true;
  }

  // Accepts and serves connections until Shutdown().
  void Serve() {
    listen_after_bind();
    const int error = errno;
    absl::MutexLock lock(&listener_mu_);
    if (stopping_.load()) return;
    // httplib ends its accept loop on an error other than EMFILE (ENFILE, ENOBUFS, ...), having
    // closed the listening socket but left its number behind: forget it, or Shutdown would
    // close whatever file has that number by then.
    svr_sock_.store(INVALID_SOCKET);
    ADMITD_LOG(kError, "HTTP endpoint stopped accepting connections",
               {{"error", std::strerror(error)}});
  }

  // Wakes every connection and the accept loop. The eventfd stays readable from now on.
  void Shutdown() {
    absl::MutexLock lock(&listener_mu_);
    stopping_.store(true);
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
    // httplib's stop() does nothing before the accept loop has started; this always works.
    const socket_t listener = svr_sock_.exchange(INVALID_SOCKET);
    if (listener != INVALID_SOCKET) {
      ::shutdown(listener, SHUT_RDWR);
      ::close(listener);
    }
  }

 private:
  HandlerResponse Route(const httplib::Request& req, httplib::Response& res) const {
    const auto route = routes_.find(req.path);
    if (route == routes_.end()) {
      res.status = 404;
      res.set_content("not found\n", kTextPlain);
    } else if (req.method != "GET" && req.method != "HEAD") {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      res.set_content("method not allowed\n", kTextPlain);
    } else {
      HttpReply reply = route->second();
      res.status = reply.status;
      res.body = std::move(reply.body);
      res.set_header("Content-Type", reply.content_type);
    }
    return HandlerResponse::Handled;
  }

  // Runs on a worker for each accepted connection; closes it.
  bool process_and_close_socket(socket_t sock) override {
    int yes = 1;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    // The first request must be complete within the read timeout of a worker taking the
    // connection (with TLS, the handshake too); later ones wait up to the keep-alive timeout for
    // their first byte, then have the read timeout for the rest.
    absl::Time first_byte_by = absl::Now() + options_.read_timeout;
    std::unique_ptr<SSL, decltype(&SSL_free)> ssl(nullptr, &SSL_free);
    if (tls_ctx_ != nullptr) {
      fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);
      ssl.reset(SSL_new(tls_ctx_.get()));
      if (ssl == nullptr || SSL_set_fd(ssl.get(), sock) != 1) {
        ::close(sock);
        return false;
      }
    }
    ConnectionStream stream(sock, wake_fd_, options_.write_timeout, ssl.get());
    if (ssl != nullptr && !stream.Handshake(first_byte_by)) {
      ::close(sock);
      return false;
    }
    bool ok = false;
    for (int served = 0; served < max_requests_; ++served) {
      if (stopping_.load()) break;
      if (!stream.has_buffered_input() && !WaitFor(sock, POLLIN, wake_fd_, first_byte_by)) break;
      stream.set_read_deadline(served == 0 ? first_byte_by : absl::Now() + options_.read_timeout);
      bool close_after = false;
      const bool last = served + 1 == max_requests_;
      ok = process_request(stream, last, close_after, [&close_after](httplib::Request& req) {
        // Request bodies are never read (no route takes one), so a connection that carried one
        // cannot be reused; nor is one reused after a refused method.
        const bool has_body =
            req.has_header("Transfer-Encoding") ||
            (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
        if (has_body || (req.method != "GET" && req.method != "HEAD")) {
          close_after = true;
          req.headers.erase("Connection");
          req.set_header("Connection", "close");
        }
      });
      if (!ok || close_after) break;
      first_byte_by = absl::Now() + options_.keep_alive_timeout;
    }
    if (ssl != nullptr) SSL_shutdown(ssl.get());  // close_notify, without waiting for the peer's
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
  }

  const HttpEndpointOptions options_;
  const Routes routes_;
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> tls_ctx_{nullptr, &SSL_CTX_free};  // by Init
  const int max_requests_;  // a connection's, at least 1
  int wake_fd_ = -1;        // set by Init
  std::atomic<bool> stopping_{false};
  absl::Mutex listener_mu_;  // orders Serve's end against Shutdown
};

absl::StatusOr<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(const std::string& address,
                                                                  Routes routes,
                                                                  HttpEndpointOptions options) {
  std::string host;
  int port = 0;
  if (!SplitHostPort(address, &host, &port)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", address, "\" is not host:port"));
  }
  auto endpoint = absl::WrapUnique(new HttpEndpoint());
  endpoint->server_ = std::make_unique<Impl>(options, std::move(routes));
  if (!endpoint->server_->Init()) {
    return absl::InternalError(absl::StrCat("cannot set up the endpoint (eventfd or TLS): ",
                                            std::strerror(errno)));
  }
  errno = 0;
  const int bound = port == 0 ? endpoint->server_->bind_to_any_port(host)
                              : (endpoint->server_->bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address, errno != 0 ? ": " : "",
                                               errno != 0 ? std::strerror(errno) : ""));
  }
  endpoint->port_ = bound;
  endpoint->listener_ = std::thread([s = endpoint->server_.get()] { s->Serve(); });
  return endpoint;
}

void HttpEndpoint::Stop() {
  absl::MutexLock lock(&stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  server_->Shutdown();
  // The accept loop ends, and its thread pool joins its workers: each one's connection was
  // woken by Shutdown, and connections still queued are closed without being read.
  if (listener_.joinable()) listener_.join();
}

HttpEndpoint::~HttpEndpoint() { Stop(); }

}  // namespace admitd
