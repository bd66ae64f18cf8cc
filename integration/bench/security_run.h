// The cost of transport security and access control, measured: the raw run (null RPCs and
// Submit -> admitted -> Finished cycles) against four admitd processes started in turn, one
// per setting: plaintext, TLS, mTLS with the authorization policy checked on every call, and TLS
// with a service-account bearer token verified (and cached) plus the policy. Each figure is
// printed next to the plaintext one of the same run.
#ifndef ADMITD_INTEGRATION_BENCH_SECURITY_RUN_H_
#define ADMITD_INTEGRATION_BENCH_SECURITY_RUN_H_

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace admitd::bench {

// 0 when every run completed without errors or violations.
int RunSecurityComparison(const std::string& admitd_binary,
                          const std::vector<std::string>& admitd_args, int clients,
                          absl::Duration duration);

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_SECURITY_RUN_H_
