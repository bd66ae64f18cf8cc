#include "common/connection.h"

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/replica_target.h"

namespace admitd {
namespace {

bool Readable(const std::string& path) { return std::ifstream(path).good(); }

// Sends "authorization: Bearer <token>", the token read from its file again when the file
// changed (a projected service-account token is rewritten before it expires).
class TokenFilePlugin : public grpc::MetadataCredentialsPlugin {
 public:
  explicit TokenFilePlugin(std::string path) : path_(std::move(path)) {}
  // A stat (and rarely a small read) per call: cheaper inline than a hop to gRPC's thread pool.
  bool IsBlocking() const override { return false; }

  grpc::Status GetMetadata(grpc::string_ref, grpc::string_ref, const grpc::AuthContext&,
                           std::multimap<grpc::string, grpc::string>* metadata) override {
    struct stat st {};
    if (stat(path_.c_str(), &st) != 0) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          absl::StrCat("cannot read the token file ", path_));
    }
    const std::string stamp = absl::StrCat(st.st_ino, ":", st.st_mtim.tv_sec, ".",
                                           st.st_mtim.tv_nsec, ":", st.st_size);
    absl::MutexLock lock(&mu_);
    if (stamp != stamp_) {
      std::ifstream in(path_);
      std::stringstream text;
      text << in.rdbuf();
      token_ = std::string(absl::StripAsciiWhitespace(text.str()));
      stamp_ = stamp;
    }
    metadata->insert({"authorization", absl::StrCat("Bearer ", token_)});
    return grpc::Status::OK;
  }

 private:
  const std::string path_;
  absl::Mutex mu_;
  std::string stamp_ ABSL_GUARDED_BY(mu_);
  std::string token_ ABSL_GUARDED_BY(mu_);
};

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

}  // namespace

ConnectionOptions ConnectionOptionsFromEnvironment(const std::string& target) {
  ConnectionOptions options;
  options.target = target;
  options.ca_file = Env("ADMITD_CA_FILE");
  options.cert_file = Env("ADMITD_CERT_FILE");
  options.key_file = Env("ADMITD_KEY_FILE");
  options.token_file = Env("ADMITD_TOKEN_FILE");
  options.token = Env("ADMITD_TOKEN");
  return options;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> Connect(const ConnectionOptions& options,
                                                       grpc::ChannelArguments args) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs its key and the reverse (--cert-file with --key-file)");
  }
  std::string target = options.target;
  if (IsReplicaList(target)) {
    std::string authority;
    absl::StatusOr<std::string> list = ReplicaListTarget(target, &authority);
    if (!list.ok()) return list.status();
    target = *std::move(list);
    args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, authority);
  }
  if (options.follow_leader || IsReplicaList(options.target)) {
    args.SetServiceConfigJSON(FollowLeaderServiceConfig());
    // A new leader takes calls on an address whose connection just went away: come back in
    // a tenth of a second rather than gRPC's first second.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  }
  const bool tls = options.tls || !options.ca_file.empty() || !options.cert_file.empty() ||
                   !options.token_file.empty() || !options.token.empty();
  if (!tls) return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  for (const std::string* file :
       {&options.ca_file, &options.cert_file, &options.key_file, &options.token_file}) {
    if (!file->empty() && !Readable(*file)) {
      return absl::FailedPreconditionError(absl::StrCat("cannot read ", *file));
    }
  }
  grpc::experimental::TlsChannelCredentialsOptions tls_options;
  if (!options.ca_file.empty() || !options.cert_file.empty()) {
    tls_options.set_certificate_provider(
        std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
            options.key_file, options.cert_file, options.ca_file, /*refresh_interval_sec=*/10));
    if (!options.ca_file.empty()) tls_options.watch_root_certs();
    if (!options.cert_file.empty()) tls_options.watch_identity_key_cert_pairs();
  }
  std::shared_ptr<grpc::ChannelCredentials> creds =
      grpc::experimental::TlsCredentials(tls_options);
  if (!options.token_file.empty()) {
    creds = grpc::CompositeChannelCredentials(
        creds, grpc::MetadataCredentialsFromPlugin(
                   std::make_unique<TokenFilePlugin>(options.token_file)));
  } else if (!options.token.empty()) {
    creds = grpc::CompositeChannelCredentials(creds, grpc::AccessTokenCredentials(options.token));
  }
  if (!options.server_name.empty()) {
    args.SetSslTargetNameOverride(options.server_name);
  }
  return grpc::CreateCustomChannel(target, creds, args);
}

}  // namespace admitd
