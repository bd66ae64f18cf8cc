// The gRPC health service names admitd answers for (docs/operations.md, docs/high-availability.md).
// "" and the API services' names say whether calls are taken (a leader's readiness); kLivenessService
// says only that the process runs, for liveness probes, on a single server and on every replica
// of an HA group, leader or follower.
#ifndef ADMITD_SERVER_HEALTH_NAMES_H_
#define ADMITD_SERVER_HEALTH_NAMES_H_

namespace admitd {

inline constexpr char kLivenessService[] = "liveness";

}  // namespace admitd

#endif  // ADMITD_SERVER_HEALTH_NAMES_H_
