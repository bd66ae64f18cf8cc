#include "common/testing/test_ca.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <utility>

namespace admitd::testing {
namespace {

template <typename Write>
std::string Pem(Write write) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  write(bio.get());
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

void AddExtensions(X509* cert, X509* issuer,
                   const std::vector<std::pair<int, std::string>>& extensions) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  for (const auto& [nid, value] : extensions) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
}

std::unique_ptr<X509, decltype(&X509_free)> NewCertificate(
    EVP_PKEY* key, const std::string& common_name, const std::vector<std::string>& orgs) {
  static std::atomic<long> serial{1};
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), X509_free);
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial.fetch_add(1));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 2 * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  for (const std::string& o : orgs) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(o.c_str()), -1, -1, 0);
  }
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  return cert;
}

}  // namespace

TestCa::TestCa(const std::string& common_name)
    : key_(EVP_EC_gen("P-256"), EVP_PKEY_free), cert_(nullptr, X509_free) {
  cert_ = NewCertificate(key_.get(), common_name, {});
  X509_set_issuer_name(cert_.get(), X509_get_subject_name(cert_.get()));
  AddExtensions(cert_.get(), cert_.get(),
                {{NID_basic_constraints, "critical,CA:TRUE"},
                 {NID_key_usage, "critical,digitalSignature,keyCertSign,cRLSign"},
                 {NID_subject_key_identifier, "hash"}});
  X509_sign(cert_.get(), key_.get(), EVP_sha256());
  cert_pem_ = Pem([&](BIO* b) { PEM_write_bio_X509(b, cert_.get()); });
}

TestCertificate TestCa::Issue(const std::string& common_name,
                              const std::vector<std::string>& organizations, bool server) const {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  auto cert = NewCertificate(key.get(), common_name, organizations);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert_.get()));
  std::vector<std::pair<int, std::string>> extensions = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
      {NID_ext_key_usage, server ? "serverAuth" : "clientAuth"},
      {NID_authority_key_identifier, "keyid:always"}};
  if (server) extensions.push_back({NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"});
  AddExtensions(cert.get(), cert_.get(), extensions);
  X509_sign(cert.get(), key_.get(), EVP_sha256());
  return {Pem([&](BIO* b) { PEM_write_bio_X509(b, cert.get()); }), Pem([&](BIO* b) {
            PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
          })};
}

void WriteFileAtomically(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp", std::ios::binary) << text;
  std::rename((path + ".tmp").c_str(), path.c_str());
}

}  // namespace admitd::testing
