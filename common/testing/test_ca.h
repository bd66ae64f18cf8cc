// TestCa: a certificate authority for tests of admitd's TLS: it issues server certificates for
// 127.0.0.1 and localhost and client certificates with a chosen common name and organizations
// (the groups of an mTLS identity), all PEM encoded, and writes them as files the way a Secret
// volume update does (each file replaced by one rename).
//
//   TestCa ca("test-ca");
//   TestCertificate server = ca.Issue("admitd", {}, /*server=*/true);
//   TestCertificate shim = ca.Issue("shim-c1", {"admitd:shims"}, /*server=*/false);
//   WritePem(dir + "/ca.crt", ca.cert_pem());
//
// Thread safety: Issue may not run concurrently with itself on one TestCa.
#ifndef ADMITD_COMMON_TESTING_TEST_CA_H_
#define ADMITD_COMMON_TESTING_TEST_CA_H_

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <vector>

namespace admitd::testing {

struct TestCertificate {
  std::string cert_pem;
  std::string key_pem;
};

class TestCa {
 public:
  explicit TestCa(const std::string& common_name);
  const std::string& cert_pem() const { return cert_pem_; }
  // A certificate signed by this CA, valid from a minute ago for two days: for a server (SANs
  // 127.0.0.1 and localhost, serverAuth) or a client (clientAuth), with `organizations` as O.
  TestCertificate Issue(const std::string& common_name,
                        const std::vector<std::string>& organizations, bool server) const;

 private:
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key_;
  std::unique_ptr<X509, decltype(&X509_free)> cert_;
  std::string cert_pem_;
};

// Writes `text` to `path` through a temporary file renamed over it.
void WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace admitd::testing

#endif  // ADMITD_COMMON_TESTING_TEST_CA_H_
