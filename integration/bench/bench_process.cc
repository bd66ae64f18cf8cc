#include "integration/bench/bench_process.h"

#include <curl/curl.h>

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"

namespace admitd::bench {
namespace {

// The value of `name` in a /proc/net/{snmp,netstat} table of lines "Prefix: names" then
// "Prefix: values".
int64_t ProcNetCounter(const std::string& path, const std::string& prefix,
                       const std::string& name) {
  std::istringstream lines(ReadFile(path));
  std::string names, values;
  while (std::getline(lines, names) && std::getline(lines, values)) {
    if (names.rfind(prefix, 0) != 0) continue;
    std::istringstream n(names), v(values);
    std::string key, value;
    while (n >> key && v >> value) {
      int64_t out = 0;
      if (key == name && absl::SimpleAtoi(value, &out)) return out;
    }
  }
  return 0;
}

size_t AppendText(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}


// VmRSS of a process in KiB, or -1.
int64_t CurrentRssKib(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      int64_t kib = -1;
      std::istringstream(line.substr(6)) >> kib;
      return kib;
    }
  }
  return -1;
}



TcpCounters ReadTcpCounters() {
  return {ProcNetCounter("/proc/net/snmp", "Tcp:", "ActiveOpens"),
          ProcNetCounter("/proc/net/netstat", "TcpExt:", "ListenOverflows")};
}


// The value of the Prometheus sample `name` at `url`, or -1.
double ScrapeMetric(const std::string& url, const std::string& name) {
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return -1;
  std::string body;
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, AppendText);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, 5L);
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  if (curl_easy_perform(curl.get()) != CURLE_OK) return -1;
  std::istringstream lines(body);
  std::string line;
  while (std::getline(lines, line)) {
    double v = -1;
    if (line.rfind(name + " ", 0) == 0 && absl::SimpleAtod(line.substr(name.size() + 1), &v)) {
      return v;
    }
  }
  return -1;
}

// The text after `key` up to the next space or line end.
std::string FieldAfter(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return "";
  const size_t start = at + key.size();
  return text.substr(start, text.find_first_of(" \r\n", start) - start);
}

}  // namespace admitd::bench
