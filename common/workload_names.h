// Kueue's generated Workload names (semantics §1.6): "<lowercase kind>-<owner name>" truncated
// to 247 characters, "-", and the first 5 hex digits of
// sha1(kind "\n" group "\n" owner name "\n" owner uid ["\n" extra]). `extra` is an elastic job's
// generation, empty otherwise. Used by the server (slices) and the cluster shim (new Workloads).
//
//   GeneratedWorkloadName("Job", "batch", "name", "uid", "") == "job-name-ef3a1"
//
// Thread safety: a pure function.
#ifndef ADMITD_COMMON_WORKLOAD_NAMES_H_
#define ADMITD_COMMON_WORKLOAD_NAMES_H_

#include <string>

namespace admitd {

std::string GeneratedWorkloadName(const std::string& kind, const std::string& group,
                                  const std::string& owner_name, const std::string& owner_uid,
                                  const std::string& extra);

}  // namespace admitd

#endif  // ADMITD_COMMON_WORKLOAD_NAMES_H_
