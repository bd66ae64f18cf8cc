// Bootstrapping a replica from the leader (docs/high-availability.md, "Trimming and bootstrap").
//
// SnapshotService, on the leader's gRPC server: Replication.Snapshot checkpoints the leader's
// store (store::Store::Checkpoint: a consistent copy between two commits) next to its data dir
// and streams its files. While a snapshot is being sent, and for `pin_for` afterwards, the log is
// not trimmed past the snapshot's revision (TrimLimit), so the replica that receives it can catch
// up from the log where the snapshot ends.
//
// FetchSnapshot, on a replica: receives such a stream into a new directory, each file written,
// checked against its announced size and synced, and returns the snapshot's revision. The
// replica then opens its store on that directory in place of its old one.
//
//   SnapshotService service("prod", store, "/var/lib/admitd");  // registered on the leader
//   uint64_t limit = service.TrimLimit(absl::Now());
//
//   absl::StatusOr<uint64_t> revision = FetchSnapshot(channel, "prod", "r2", "/var/lib/admitd.new");
//
// Thread safety: the service's methods may be called from any thread.
#ifndef ADMITD_SERVER_HA_SNAPSHOT_H_
#define ADMITD_SERVER_HA_SNAPSHOT_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "admitd/ha/v1/replication.grpc.pb.h"
#include "store/store.h"

namespace admitd::ha {

class SnapshotService final : public v1::Replication::Service {
 public:
  // `store` outlives the service; checkpoints are written beside `data_dir`.
  SnapshotService(std::string domain, const store::Store* store, std::string data_dir,
                  absl::Duration pin_for = absl::Minutes(1));

  grpc::Status Snapshot(grpc::ServerContext* context, const v1::SnapshotRequest* request,
                        grpc::ServerWriter<v1::SnapshotChunk>* writer) override;

  // Checks each caller (an authorization policy's: a snapshot holds every object). Until it is
  // set, calls are refused UNAVAILABLE.
  void SetAuthorizer(std::function<absl::Status(const grpc::ServerContextBase&)> authorize);

  // The highest revision the log may be trimmed to: the oldest pinned snapshot's, or
  // UINT64_MAX when none is pinned at `now`. A snapshot stops holding trimming back once its
  // replica is among `registered` (replica id -> revision applied) at or past its revision.
  uint64_t TrimLimit(absl::Time now, const std::map<std::string, uint64_t>& registered);

 private:
  const std::string domain_;
  const store::Store* const store_;
  const std::string data_dir_;
  const absl::Duration pin_for_;
  absl::Mutex mu_;
  std::function<absl::Status(const grpc::ServerContextBase&)> authorize_ ABSL_GUARDED_BY(mu_);
  int next_ ABSL_GUARDED_BY(mu_) = 0;
  // What holds trimming back: a snapshot being sent, or sent to a replica that has not said
  // since that it applied it.
  struct Pin {
    std::string replica;
    uint64_t revision = 0;
    absl::Time until;  // InfiniteFuture while being sent
  };
  std::map<int, Pin> pins_ ABSL_GUARDED_BY(mu_);  // by snapshot number
};

// Receives a snapshot of `domain`'s leader over `channel` into `dir` (which must not exist;
// removed again on any error) and returns its revision. UNAVAILABLE when the leader cannot be
// reached or the stream broke; DATA_LOSS when a file is not the size announced; the leader's
// refusal otherwise.
absl::StatusOr<uint64_t> FetchSnapshot(const std::shared_ptr<grpc::Channel>& channel,
                                       const std::string& domain, const std::string& replica,
                                       const std::string& dir);

}  // namespace admitd::ha

#endif  // ADMITD_SERVER_HA_SNAPSHOT_H_
