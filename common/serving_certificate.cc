#include "common/serving_certificate.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file_stamp.h"

namespace admitd {
namespace {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct ChainFree {
  void operator()(STACK_OF(X509) * s) const { sk_X509_pop_free(s, X509_free); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct StoreFree {
  void operator()(X509_STORE* s) const { X509_STORE_free(s); }
};

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "no detail";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

}  // namespace

struct ServingCertificate::Loaded {
  std::unique_ptr<X509, X509Free> cert;
  std::unique_ptr<STACK_OF(X509), ChainFree> chain;
  std::unique_ptr<EVP_PKEY, PkeyFree> key;
  std::unique_ptr<X509_STORE, StoreFree> client_cas;  // null without a client CA file
  std::unique_ptr<STACK_OF(X509_NAME), void (*)(STACK_OF(X509_NAME)*)> ca_names{
      nullptr, [](STACK_OF(X509_NAME) * s) { sk_X509_NAME_pop_free(s, X509_NAME_free); }};
};

namespace {

absl::StatusOr<std::shared_ptr<ServingCertificate::Loaded>> LoadFiles(
    const ServingCertificateFiles& files) {
  absl::StatusOr<std::string> cert_pem = ReadWholeFile(files.cert_file);
  if (!cert_pem.ok()) return cert_pem.status();
  absl::StatusOr<std::string> key_pem = ReadWholeFile(files.key_file);
  if (!key_pem.ok()) return key_pem.status();
  auto loaded = std::make_shared<ServingCertificate::Loaded>();
  std::unique_ptr<BIO, BioFree> bio(
      BIO_new_mem_buf(cert_pem->data(), static_cast<int>(cert_pem->size())));
  loaded->cert.reset(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (loaded->cert == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("no certificate in ", files.cert_file, ": ", OpenSslError()));
  }
  loaded->chain.reset(sk_X509_new_null());
  while (X509* extra = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    sk_X509_push(loaded->chain.get(), extra);
  }
  ERR_clear_error();  // the end of the file
  bio.reset(BIO_new_mem_buf(key_pem->data(), static_cast<int>(key_pem->size())));
  loaded->key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (loaded->key == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("no private key in ", files.key_file, ": ", OpenSslError()));
  }
  if (X509_check_private_key(loaded->cert.get(), loaded->key.get()) != 1) {
    ERR_clear_error();
    return absl::FailedPreconditionError(absl::StrCat("the private key in ", files.key_file,
                                                      " does not match the certificate in ",
                                                      files.cert_file));
  }
  if (!files.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca_pem = ReadWholeFile(files.client_ca_file);
    if (!ca_pem.ok()) return ca_pem.status();
    loaded->client_cas.reset(X509_STORE_new());
    loaded->ca_names.reset(sk_X509_NAME_new_null());
    bio.reset(BIO_new_mem_buf(ca_pem->data(), static_cast<int>(ca_pem->size())));
    int count = 0;
    while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(loaded->client_cas.get(), ca);
      sk_X509_NAME_push(loaded->ca_names.get(), X509_NAME_dup(X509_get_subject_name(ca)));
      X509_free(ca);
      ++count;
    }
    ERR_clear_error();
    if (count == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("no CA certificate in ", files.client_ca_file));
    }
  }
  return loaded;
}

}  // namespace

absl::StatusOr<std::shared_ptr<ServingCertificate>> ServingCertificate::Load(
    ServingCertificateFiles files) {
  std::shared_ptr<ServingCertificate> cert(new ServingCertificate(std::move(files)));
  absl::StatusOr<std::shared_ptr<Loaded>> loaded = LoadFiles(cert->files_);
  if (!loaded.ok()) return loaded.status();
  absl::MutexLock lock(&cert->mu_);
  cert->current_ = *std::move(loaded);
  cert->stamps_ = absl::StrCat(FileStamp(cert->files_.cert_file), " ",
                               FileStamp(cert->files_.key_file), " ",
                               FileStamp(cert->files_.client_ca_file));
  cert->last_check_ = absl::Now();
  return cert;
}

ServingCertificate::~ServingCertificate() = default;

std::shared_ptr<const ServingCertificate::Loaded> ServingCertificate::Current() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  if (now - last_check_ >= files_.check_interval) {
    last_check_ = now;
    const std::string stamps = absl::StrCat(FileStamp(files_.cert_file), " ",
                                            FileStamp(files_.key_file), " ",
                                            FileStamp(files_.client_ca_file));
    if (stamps != stamps_) {
      absl::StatusOr<std::shared_ptr<Loaded>> loaded = LoadFiles(files_);
      if (loaded.ok()) {
        current_ = *std::move(loaded);
        stamps_ = stamps;
      }
    }
  }
  return current_;
}

int ServingCertificate::OnHandshake(SSL* ssl, void* arg) {
  std::shared_ptr<const Loaded> now = static_cast<ServingCertificate*>(arg)->Current();
  if (now == nullptr) return 0;
  if (SSL_use_cert_and_key(ssl, now->cert.get(), now->key.get(), now->chain.get(),
                           /*override=*/1) != 1) {
    return 0;
  }
  if (now->client_cas != nullptr) {
    // The connection keeps its own references: a reload during the handshake frees nothing it
    // uses.
    SSL_set1_verify_cert_store(ssl, now->client_cas.get());
    STACK_OF(X509_NAME)* names = sk_X509_NAME_deep_copy(now->ca_names.get(), X509_NAME_dup,
                                                        X509_NAME_free);
    SSL_set_client_CA_list(ssl, names);
  }
  return 1;
}

void ServingCertificate::Install(SSL_CTX* ctx) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_cert_cb(ctx, &ServingCertificate::OnHandshake, this);
  if (!files_.client_ca_file.empty()) {
    SSL_CTX_set_verify(ctx,
                       SSL_VERIFY_PEER | (files_.require_client_certificate
                                              ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                                              : 0),
                       nullptr);
  }
}

std::string ServingCertificate::CurrentSubject() {
  std::shared_ptr<const Loaded> now = Current();
  char cn[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(now->cert.get()), NID_commonName, cn,
                            sizeof(cn));
  return cn;
}

}  // namespace admitd
