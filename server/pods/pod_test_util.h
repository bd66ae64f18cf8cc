// Test-only: a pod builder in the spirit of Kueue's testingpod.MakePod, shared by the pod
// library's tests.
#ifndef ADMITD_SERVER_PODS_POD_TEST_UTIL_H_
#define ADMITD_SERVER_PODS_POD_TEST_UTIL_H_

#include <string>

#include "absl/time/time.h"
#include "server/pods/pod_group.h"

namespace admitd::pods {

inline const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

inline google::protobuf::Timestamp Ts(absl::Time t) {
  google::protobuf::Timestamp ts;
  ts.set_seconds(absl::ToUnixSeconds(t));
  return ts;
}

// A pod builder in the spirit of Kueue's testingpod.MakePod.
class PodBuilder {
 public:
  PodBuilder(const std::string& name, const std::string& ns = "ns") {
    pod_.set_cluster("c1");
    pod_.set_namespace_(ns);
    pod_.set_name(name);
    pod_.set_uid(name + "-uid");
    *pod_.mutable_creation_timestamp() = Ts(kT0);
    pod_.set_phase(v1::POD_PHASE_PENDING);
    Request("cpu", "1");
  }
  PodBuilder& Request(const std::string& r, const std::string& q) {
    if (pod_.spec().containers_size() == 0) pod_.mutable_spec()->add_containers()->set_name("c");
    (*pod_.mutable_spec()->mutable_containers(0)->mutable_resources()->mutable_requests())[r] = q;
    return *this;
  }
  PodBuilder& Label(const std::string& k, const std::string& v) {
    (*pod_.mutable_labels())[k] = v;
    return *this;
  }
  PodBuilder& Annotation(const std::string& k, const std::string& v) {
    (*pod_.mutable_annotations())[k] = v;
    return *this;
  }
  PodBuilder& Queue(const std::string& q) { return Label(kQueueNameLabel, q); }
  PodBuilder& Group(const std::string& g, const std::string& total) {
    Label(kGroupNameLabel, g);
    return Annotation(kGroupTotalCountAnnotation, total);
  }
  PodBuilder& Managed() {
    Label(kManagedLabel, "true");
    pod_.add_finalizers(kManagedFinalizer);
    return *this;
  }
  PodBuilder& Gated() {
    pod_.add_scheduling_gates()->set_name(kAdmissionGate);
    return *this;
  }
  PodBuilder& Phase(v1::PodPhase p) {
    pod_.set_phase(p);
    return *this;
  }
  PodBuilder& Created(absl::Time t) {
    *pod_.mutable_creation_timestamp() = Ts(t);
    return *this;
  }
  PodBuilder& Deleted(absl::Time t) {
    *pod_.mutable_deletion_timestamp() = Ts(t);
    return *this;
  }
  PodBuilder& Grace(int64_t s) {
    pod_.set_deletion_grace_period_seconds(s);
    return *this;
  }
  PodBuilder& Node(const std::string& n) {
    pod_.set_node_name(n);
    return *this;
  }
  PodBuilder& Message(const std::string& m) {
    pod_.set_status_message(m);
    return *this;
  }
  PodBuilder& FailedAt(absl::Time t) {
    v1::Condition* c = pod_.add_conditions();
    c->set_type("ContainersReady");
    c->set_status("False");
    c->set_reason("Failed");
    *c->mutable_last_transition_time() = Ts(t);
    return Phase(v1::POD_PHASE_FAILED);
  }
  v1::PodObservation Obj() const { return pod_; }
  operator v1::PodObservation() const { return pod_; }

 private:
  v1::PodObservation pod_;
};

// A group member as the webhook leaves it.
inline PodBuilder Member(const std::string& name, const std::string& total = "2") {
  PodBuilder b(name);
  b.Queue("user-queue").Group("test-group", total).Managed().Gated();
  return b;
}

}  // namespace admitd::pods

#endif  // ADMITD_SERVER_PODS_POD_TEST_UTIL_H_
