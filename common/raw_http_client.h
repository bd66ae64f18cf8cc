// RawHttpClient: a blocking TCP client for tests of HTTP endpoints, written on plain sockets so a
// test can misbehave the way real clients do (send half a request, never read the response).
// Every read has a deadline, so a test fails instead of hanging when the server does not answer.
//
//   RawHttpClient c(port);
//   c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
//   std::string response = c.ReadUntilClosed(absl::Seconds(2));
//
// Thread safety: one client per thread. Test-only.
#ifndef ADMITD_COMMON_RAW_HTTP_CLIENT_H_
#define ADMITD_COMMON_RAW_HTTP_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace admitd {

class RawHttpClient {
 public:
  // Connects to 127.0.0.1:`port`. A `receive_buffer` > 0 shrinks the socket's receive buffer
  // first, so that a client that does not read stalls the server's writes sooner.
  explicit RawHttpClient(int port, int receive_buffer = 0) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (receive_buffer > 0) {
      setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawHttpClient() {
    if (fd_ >= 0) close(fd_);
  }
  RawHttpClient(const RawHttpClient&) = delete;
  RawHttpClient& operator=(const RawHttpClient&) = delete;

  bool connected() const { return connected_; }

  bool Send(absl::string_view data) {
    while (!data.empty()) {
      const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Everything received until the server closes the connection or `timeout` passes.
  std::string ReadUntilClosed(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    std::string out;
    while (ReadSome(deadline, &out)) {
    }
    return out;
  }

  // One response: its head and, after it, as many bytes as its Content-Length says. Whatever
  // arrived when `timeout` passes if the response is not complete by then.
  std::string ReadResponse(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    std::string out = std::move(pending_);
    pending_.clear();
    size_t head_end;
    while ((head_end = out.find("\r\n\r\n")) == std::string::npos) {
      if (!ReadSome(deadline, &out)) return out;
    }
    head_end += 4;
    size_t length = 0;
    const size_t at = Lowercase(out.substr(0, head_end)).find("\r\ncontent-length:");
    if (at != std::string::npos) {
      const size_t start = at + 17;
      const size_t end = out.find("\r\n", start);
      std::string value = out.substr(start, end - start);
      value.erase(0, value.find_first_not_of(' '));
      if (!absl::SimpleAtoi(value, &length)) length = 0;
    }
    while (out.size() < head_end + length) {
      if (!ReadSome(deadline, &out)) return out;
    }
    pending_ = out.substr(head_end + length);
    out.resize(head_end + length);
    return out;
  }

 private:
  // Appends what arrives before `deadline`; false on timeout, end of stream or error.
  bool ReadSome(absl::Time deadline, std::string* out) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <= 0) return false;
    char buf[65536];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    out->append(buf, static_cast<size_t>(n));
    return true;
  }

  static std::string Lowercase(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string pending_;  // bytes after the last response read
};

// Sends `method path` with "Connection: close" and returns the whole response, or what arrived
// within `timeout`.
inline std::string HttpRequest(int port, const std::string& method, const std::string& path,
                               absl::Duration timeout = absl::Seconds(5)) {
  RawHttpClient client(port);
  if (!client.connected()) return "";
  client.Send(absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  return client.ReadUntilClosed(timeout);
}

}  // namespace admitd

#endif  // ADMITD_COMMON_RAW_HTTP_CLIENT_H_
