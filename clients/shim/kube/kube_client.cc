#include "clients/shim/kube/kube_client.h"

#include <cstdlib>

#include <curl/curl.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace admitd::shim {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct HeaderDeleter {
  void operator()(curl_slist* h) const { curl_slist_free_all(h); }
};

size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

absl::StatusCode CodeFor(long http, const std::string& reason) {
  switch (http) {
    case 400: case 422: return absl::StatusCode::kInvalidArgument;
    case 401: return absl::StatusCode::kUnauthenticated;
    case 403: return absl::StatusCode::kPermissionDenied;
    case 404: return absl::StatusCode::kNotFound;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410: return absl::StatusCode::kOutOfRange;
    case 429: return absl::StatusCode::kResourceExhausted;
    default: return http >= 500 ? absl::StatusCode::kUnavailable : absl::StatusCode::kUnknown;
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

namespace {

// A kubeconfig's relative file paths are relative to the kubeconfig's directory.
std::string Resolve(const std::string& kubeconfig, const std::string& file) {
  if (file.empty() || file[0] == '/') return file;
  const size_t slash = kubeconfig.rfind('/');
  return slash == std::string::npos ? file : kubeconfig.substr(0, slash + 1) + file;
}

void SetBlob(CURL* curl, CURLoption option, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(curl, option, &blob);
}

}  // namespace

absl::Status StatusFromHttp(long code, const std::string& body) {
  if (code >= 200 && code < 300) return absl::OkStatus();
  std::string message = body;
  std::string reason;
  const nlohmann::json status = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (status.is_object() && status.value("kind", "") == "Status") {
    message = status.value("message", "");
    reason = status.value("reason", "");
  }
  return absl::Status(CodeFor(code, reason), absl::StrCat("HTTP ", code, ": ", message));
}

absl::StatusOr<KubeConfig> KubeConfig::FromKubeconfig(const std::string& path) {
  try {
    const YAML::Node doc = YAML::LoadFile(path);
    const std::string current = doc["current-context"] ? doc["current-context"].as<std::string>() : "";
    YAML::Node context;
    for (const YAML::Node& c : doc["contexts"]) {
      if (c["name"].as<std::string>() == current) context = c["context"];
    }
    if (!context) return absl::InvalidArgumentError(absl::StrCat(path, ": no context \"", current, "\""));
    KubeConfig out;
    const std::string cluster = context["cluster"].as<std::string>();
    const std::string user = context["user"] ? context["user"].as<std::string>() : "";
    for (const YAML::Node& c : doc["clusters"]) {
      if (c["name"].as<std::string>() != cluster) continue;
      out.server = c["cluster"]["server"].as<std::string>();
      if (c["cluster"]["certificate-authority"]) {
        out.ca_file = Resolve(path, c["cluster"]["certificate-authority"].as<std::string>());
      }
      if (c["cluster"]["certificate-authority-data"]) {
        if (!absl::Base64Unescape(c["cluster"]["certificate-authority-data"].as<std::string>(),
                                  &out.ca_data)) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ": certificate-authority-data is not base64"));
        }
      }
      if (c["cluster"]["insecure-skip-tls-verify"]) {
        out.insecure_skip_tls_verify = c["cluster"]["insecure-skip-tls-verify"].as<bool>();
      }
    }
    for (const YAML::Node& u : doc["users"]) {
      if (u["name"].as<std::string>() != user || !u["user"]) continue;
      const YAML::Node& user_node = u["user"];
      if (user_node["token"]) out.token = user_node["token"].as<std::string>();
      if (user_node["tokenFile"]) {
        out.token_file = Resolve(path, user_node["tokenFile"].as<std::string>());
      }
      if (user_node["client-certificate"]) {
        out.client_cert_file = Resolve(path, user_node["client-certificate"].as<std::string>());
      }
      if (user_node["client-key"]) {
        out.client_key_file = Resolve(path, user_node["client-key"].as<std::string>());
      }
      for (const auto& [key, field] : {std::pair<const char*, std::string*>{
                                           "client-certificate-data", &out.client_cert_data},
                                       {"client-key-data", &out.client_key_data}}) {
        if (user_node[key] && !absl::Base64Unescape(user_node[key].as<std::string>(), field)) {
          return absl::InvalidArgumentError(absl::StrCat(path, ": ", key, " is not base64"));
        }
      }
      for (const char* unsupported : {"exec", "auth-provider", "username"}) {
        if (user_node[unsupported]) {
          return absl::InvalidArgumentError(absl::StrCat(
              path, ": user \"", user, "\" authenticates with ", unsupported,
              ", which admitd-shim does not support (use a token or a client certificate)"));
        }
      }
    }
    if (out.server.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": no server for cluster \"", cluster, "\""));
    }
    return out;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
}

absl::StatusOr<KubeConfig> KubeConfig::InCluster(const std::string& account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == 0 || *port == 0) {
    return absl::FailedPreconditionError(
        "not in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset): "
        "pass --kubeconfig");
  }
  KubeConfig out;
  const std::string h = host;
  out.server = absl::StrCat("https://", h.find(':') != std::string::npos ? "[" + h + "]" : h, ":",
                            port);
  out.token_file = account_dir + "/token";
  out.ca_file = account_dir + "/ca.crt";
  if (ReadFile(out.token_file).empty()) {
    return absl::FailedPreconditionError("no service-account token at " + out.token_file);
  }
  return out;
}

KubeClient::KubeClient(KubeConfig config) : config_(std::move(config)) { GlobalInit(); }

void KubeClient::SetTls(void* handle) const {
  CURL* curl = static_cast<CURL*>(handle);
  if (!config_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, config_.ca_file.c_str());
  if (!config_.ca_data.empty()) SetBlob(curl, CURLOPT_CAINFO_BLOB, config_.ca_data);
  if (!config_.client_cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, config_.client_cert_file.c_str());
  }
  if (!config_.client_key_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLKEY, config_.client_key_file.c_str());
  }
  if (!config_.client_cert_data.empty()) SetBlob(curl, CURLOPT_SSLCERT_BLOB, config_.client_cert_data);
  if (!config_.client_key_data.empty()) SetBlob(curl, CURLOPT_SSLKEY_BLOB, config_.client_key_data);
  if (config_.insecure_skip_tls_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
}

std::string KubeClient::Token() const {
  if (!config_.token_file.empty()) {
    return std::string(absl::StripAsciiWhitespace(ReadFile(config_.token_file)));
  }
  return config_.token;
}

void KubeClient::Count(const std::string& method, long http_code) const {
  int verb = 0;
  for (int i = 0; i < 5; ++i) {
    if (method == kVerbs[i]) verb = i;
  }
  const int outcome = http_code >= 200 && http_code < 600 ? static_cast<int>(http_code / 100) - 2
                                                          : 4;
  (*counts_)[verb * 5 + outcome].fetch_add(1, std::memory_order_relaxed);
}

absl::StatusOr<nlohmann::json> KubeClient::Request(const std::string& method,
                                                   const std::string& path,
                                                   const std::string& body,
                                                   const std::string& content_type) const {
  // One handle per thread, reset between requests: its connections stay open for the next
  // request (no TCP or TLS handshake per call).
  thread_local std::unique_ptr<CURL, CurlDeleter> handle(curl_easy_init());
  if (!handle) return absl::InternalError("curl_easy_init failed");
  curl_easy_reset(handle.get());
  CURL* const curl = handle.get();
  const std::string url = config_.server + path;
  std::string response;
  std::unique_ptr<curl_slist, HeaderDeleter> headers;
  auto add = [&](const std::string& h) {
    headers.reset(curl_slist_append(headers.release(), h.c_str()));
  };
  add("Accept: application/json");
  if (!content_type.empty()) add("Content-Type: " + content_type);
  if (const std::string token = Token(); !token.empty()) add("Authorization: Bearer " + token);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  SetTls(curl);
  if (!body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  const CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    Count(method, 0);
    return absl::UnavailableError(absl::StrCat(method, " ", url, ": ", curl_easy_strerror(rc)));
  }
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  Count(method, code);
  if (absl::Status s = StatusFromHttp(code, response); !s.ok()) return s;
  nlohmann::json out = nlohmann::json::parse(response, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) {
    return absl::DataLossError(absl::StrCat(method, " ", url, ": the answer is not JSON"));
  }
  return out;
}

absl::StatusOr<nlohmann::json> KubeClient::Get(const std::string& path) const {
  return Request("GET", path, "", "");
}

absl::StatusOr<nlohmann::json> KubeClient::Create(const std::string& path,
                                                  const nlohmann::json& body) const {
  return Request("POST", path, body.dump(), "application/json");
}

absl::StatusOr<nlohmann::json> KubeClient::Update(const std::string& path,
                                                  const nlohmann::json& body) const {
  return Request("PUT", path, body.dump(), "application/json");
}

absl::StatusOr<nlohmann::json> KubeClient::Patch(const std::string& path,
                                                 const nlohmann::json& body,
                                                 const std::string& content_type) const {
  return Request("PATCH", path, body.dump(), content_type);
}

absl::StatusOr<nlohmann::json> KubeClient::Delete(const std::string& path) const {
  return Request("DELETE", path, "", "");
}

absl::StatusOr<nlohmann::json> KubeClient::DeleteUid(const std::string& path,
                                                     const std::string& uid,
                                                     const std::string& propagation) const {
  nlohmann::json options = {{"apiVersion", "v1"},
                            {"kind", "DeleteOptions"},
                            {"preconditions", {{"uid", uid}}}};
  if (!propagation.empty()) options["propagationPolicy"] = propagation;
  return Request("DELETE", path, options.dump(), "application/json");
}

namespace {

// The state of one watch stream while libcurl delivers it.
struct WatchState {
  CURL* curl;
  const std::function<bool(const WatchEvent&)>* on_event;
  std::string pending;  // bytes after the last complete line
  std::string first_bytes;  // kept for an error answer's body
  absl::Status status;
  bool stopped = false;
  const std::atomic<bool>* cancel = nullptr;
};

// Called by libcurl about once a second even while no byte arrives: ends the transfer once the
// caller cancels.
int OnWatchProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* st = static_cast<WatchState*>(user);
  if (st->cancel != nullptr && st->cancel->load()) {
    st->stopped = true;
    return 1;
  }
  return 0;
}

size_t OnWatchBytes(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<WatchState*>(user);
  long code = 0;
  curl_easy_getinfo(st->curl, CURLINFO_RESPONSE_CODE, &code);
  if (code < 200 || code >= 300) {  // an error answer: a Status, read once the transfer ends
    if (st->first_bytes.size() < 65536) st->first_bytes.append(data, size * n);
    return size * n;
  }
  st->pending.append(data, size * n);
  size_t start = 0;
  for (size_t nl; (nl = st->pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string line = st->pending.substr(start, nl - start);
    if (line.empty()) continue;
    const nlohmann::json e = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!e.is_object()) {
      st->status = absl::DataLossError("a watch event is not JSON");
      return 0;
    }
    WatchEvent event{e.value("type", ""), e.value("object", nlohmann::json::object())};
    if (event.type == "ERROR") {
      const long code = event.object.value("code", 500L);
      st->status = StatusFromHttp(code, event.object.dump());
      return 0;  // ends the transfer
    }
    if (!(*st->on_event)(event)) {
      st->stopped = true;
      return 0;
    }
  }
  st->pending.erase(0, start);
  return size * n;
}

}  // namespace

absl::Status KubeClient::Watch(const std::string& path, const std::string& resource_version,
                               int timeout_seconds,
                               const std::function<bool(const WatchEvent&)>& on_event,
                               const std::atomic<bool>* cancel) const {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return absl::InternalError("curl_easy_init failed");
  const std::string url =
      absl::StrCat(config_.server, path, path.find('?') == std::string::npos ? "?" : "&",
                   "watch=1&allowWatchBookmarks=true&timeoutSeconds=", timeout_seconds,
                   resource_version.empty() ? "" : "&resourceVersion=", resource_version);
  std::unique_ptr<curl_slist, HeaderDeleter> headers;
  auto add = [&](const std::string& h) {
    headers.reset(curl_slist_append(headers.release(), h.c_str()));
  };
  add("Accept: application/json");
  if (const std::string token = Token(); !token.empty()) add("Authorization: Bearer " + token);
  WatchState st{curl.get(), &on_event};
  st.cancel = cancel;
  curl_easy_setopt(curl.get(), CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl.get(), CURLOPT_XFERINFOFUNCTION, OnWatchProgress);
  curl_easy_setopt(curl.get(), CURLOPT_XFERINFODATA, &st);
  curl_easy_setopt(curl.get(), CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, OnWatchBytes);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &st);
  // The server ends the stream after timeoutSeconds; the margin covers a slow last write.
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, static_cast<long>(timeout_seconds) + 30L);
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  SetTls(curl.get());
  const CURLcode rc = curl_easy_perform(curl.get());
  long code = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &code);
  Count("GET", code);
  if (!st.status.ok()) return st.status;
  if (st.stopped) return absl::OkStatus();
  if (code != 0 && (code < 200 || code >= 300)) return StatusFromHttp(code, st.first_bytes);
  if (rc != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat("watch ", url, ": ", curl_easy_strerror(rc)));
  }
  return absl::OkStatus();
}

}  // namespace admitd::shim
