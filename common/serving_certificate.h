// ServingCertificate: the TLS side of admitd's own HTTPS servers (the metrics endpoint and the
// shim's admission webhook). It holds a certificate (with the rest of its chain) and private key
// read from PEM files, and reads them again when the files change, so a rotated certificate
// (cert-manager, a Secret's projected files swapped by a symlink) is served without a restart.
// With a client CA file, client certificates are verified against it (reloaded the same way).
//
// The files are checked at most once per `check_interval`, at a TLS handshake. A pair that does
// not load (one file rewritten, not yet the other) is tried again at the next check; the
// previous pair stays in use meanwhile.
//
//   ADMITD_ASSIGN_OR_RETURN(auto cert, ServingCertificate::Load({.cert_file = "tls.crt",
//                                                                 .key_file = "tls.key"}));
//   SSL_CTX* ctx = ...;
//   cert->Install(ctx);  // every handshake on ctx presents the current pair
//
// Thread safety: all methods may be called from any thread.
#ifndef ADMITD_COMMON_SERVING_CERTIFICATE_H_
#define ADMITD_COMMON_SERVING_CERTIFICATE_H_

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace admitd {

struct ServingCertificateFiles {
  std::string cert_file;  // PEM: the certificate first, then the rest of its chain
  std::string key_file;   // PEM private key matching the certificate
  // PEM bundle of the CAs that sign client certificates; empty: clients are not asked for one.
  std::string client_ca_file;
  // With client_ca_file: refuse a handshake without a client certificate (otherwise one is
  // asked for and, when sent, verified).
  bool require_client_certificate = false;
  absl::Duration check_interval = absl::Seconds(5);
};

class ServingCertificate {
 public:
  // Reads the files. FAILED_PRECONDITION naming the file when one cannot be read or parsed, or
  // when the key does not match the certificate.
  static absl::StatusOr<std::shared_ptr<ServingCertificate>> Load(ServingCertificateFiles files);
  ~ServingCertificate();

  // Sets up `ctx` (TLS 1.2 at least): each handshake presents the current pair and, with a
  // client CA, verifies the client's certificate against the current CA bundle. This object
  // must outlive `ctx`.
  void Install(SSL_CTX* ctx);

  // The subject common name of the certificate served now (for logs and tests).
  std::string CurrentSubject();

  // What one read of the files holds (opaque outside serving_certificate.cc).
  struct Loaded;

 private:
  explicit ServingCertificate(ServingCertificateFiles files) : files_(std::move(files)) {}
  // The pair and CA to use for a handshake, read again first when the interval has passed and
  // a file changed.
  std::shared_ptr<const Loaded> Current();
  static int OnHandshake(SSL* ssl, void* arg);

  const ServingCertificateFiles files_;
  absl::Mutex mu_;
  std::shared_ptr<const Loaded> current_ ABSL_GUARDED_BY(mu_);
  std::string stamps_ ABSL_GUARDED_BY(mu_);  // of the files current_ was read from
  absl::Time last_check_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace admitd

#endif  // ADMITD_COMMON_SERVING_CERTIFICATE_H_
