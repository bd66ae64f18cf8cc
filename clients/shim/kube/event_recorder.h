// Records Kubernetes Events (core/v1) on the objects the shim manages, as client-go's recorder
// does: in the background (a reconcile never waits for an event), and a repeat of the same event
// on the same object (type, reason, message) within the last 4,096 distinct ones bumps the first
// one's count and lastTimestamp instead of creating another. Best effort: a failed write is
// logged and dropped.
//
//   EventRecorder events(kube, "shim-0");  // reportingInstance
//   events.Record(job, "Normal", "Started", "Admitted by clusterQueue cq",
//                 "batch/job-kueue-controller");
//
// Thread safety: Record from any thread; the destructor drains what is queued (for at most 2 s).
#ifndef ADMITD_CLIENTS_SHIM_KUBE_EVENT_RECORDER_H_
#define ADMITD_CLIENTS_SHIM_KUBE_EVENT_RECORDER_H_

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "clients/shim/framework/interfaces.h"
#include "clients/shim/kube/kube_client.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

class EventRecorder : public EventSink {
 public:
  EventRecorder(const KubeClient& client, std::string instance);
  ~EventRecorder();

  // An event about `object` (a Kubernetes object as JSON: apiVersion, kind, metadata), from
  // `component` (source.component and reportingComponent).
  void Record(const nlohmann::json& object, const std::string& type, const std::string& reason,
              const std::string& message, const std::string& component) override;

  int64_t recorded() const;  // events written (created or counted)
  int64_t dropped() const;   // writes that failed

 private:
  struct Pending {
    nlohmann::json involved;  // the involvedObject
    std::string type, reason, message, component;
  };
  void Loop();
  void Write(const Pending& p);

  const KubeClient& client_;
  const std::string instance_;
  mutable absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time drain_until_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  int64_t recorded_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  // Aggregation (used by the writer thread only): key -> the event written and its count.
  struct Seen {
    std::string ns, name;
    int64_t count = 0;
  };
  std::map<std::string, std::pair<Seen, std::list<std::string>::iterator>> seen_;
  std::list<std::string> lru_;  // most recent first
  std::thread thread_;
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_KUBE_EVENT_RECORDER_H_
