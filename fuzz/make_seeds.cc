// Writes the seed corpora of the proto-driven fuzz targets (requests_fuzz,
// pods_fuzz): short realistic sessions, in the record framing of
// fuzz/records.h, so that mutations start from requests the engine accepts. Run
// from the source tree after changing the API:
//
//   build-asan/fuzz/make_seeds fuzz/corpus
//
// Each seed is replayed through EngineDriver before it is written, so a seed
// that crashes is never committed.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "admitd/v1/admission_service.pb.h"
#include "admitd/v1/pod_service.pb.h"
#include "admitd/v1/queue_service.pb.h"
#include "fuzz/engine_driver.h"
#include "fuzz/records.h"
#include "server/pods/pod_group.h"

namespace admitd::fuzz {
namespace {

class Session {
 public:
  template <typename Request>
  Session& Add(Rpc rpc, const Request& request) {
    AppendRecord(static_cast<uint8_t>(rpc), request.SerializeAsString(), &bytes_);
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

v1::Workload Job(const std::string& name, int count, const std::string& cpu) {
  v1::Workload wl;
  wl.mutable_metadata()->set_namespace_("ns");
  wl.mutable_metadata()->set_name(name);
  wl.mutable_spec()->set_queue_name("lq");
  v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
  ps->set_name("main");
  ps->set_count(count);
  v1::Container* c = ps->mutable_template_()->mutable_spec()->add_containers();
  c->set_name("c");
  (*c->mutable_resources()->mutable_requests())["cpu"] = cpu;
  (*c->mutable_resources()->mutable_requests())["memory"] = "512Mi";
  return wl;
}

v1::SubmitRequest Submit(const v1::Workload& wl) {
  v1::SubmitRequest r;
  *r.mutable_workload() = wl;
  return r;
}

template <typename Request>
Request Named(const std::string& name) {
  Request r;
  r.set_namespace_("ns");
  r.set_name(name);
  return r;
}

v1::ApplyRequest Apply(const v1::QueueObject& o) {
  v1::ApplyRequest r;
  *r.mutable_object() = o;
  return r;
}

// Submit, describe, finish: the common path.
std::string Basic() {
  v1::ReleaseQuotaRequest release = Named<v1::ReleaseQuotaRequest>("job-a");
  release.mutable_finished()->set_succeeded(true);
  v1::AdmitRequest admit = Named<v1::AdmitRequest>("job-b");
  admit.set_dry_run(true);
  v1::ListWorkloadsRequest list;
  list.set_namespace_("ns");
  return Session()
      .Add(Rpc::kSubmit, Submit(Job("job-a", 2, "1")))
      .Add(Rpc::kSubmit, Submit(Job("job-b", 4, "1")))
      .Add(Rpc::kAdmit, admit)
      .Add(Rpc::kReleaseQuota, release)
      .Add(Rpc::kGetWorkload, Named<v1::GetWorkloadRequest>("job-b"))
      .Add(Rpc::kListWorkloads, list)
      .Add(Rpc::kDeleteWorkload, Named<v1::DeleteWorkloadRequest>("job-b"))
      .bytes();
}

// Every queue object kind, then reads and a delete.
std::string QueueObjects() {
  v1::QueueObject wpc;
  wpc.mutable_workload_priority_class()->mutable_metadata()->set_name("high");
  wpc.mutable_workload_priority_class()->set_value(1000);
  v1::QueueObject cohort;
  cohort.mutable_cohort()->mutable_metadata()->set_name("all");
  v1::QueueObject check;
  check.mutable_admission_check()->mutable_metadata()->set_name("prov");
  check.mutable_admission_check()->mutable_spec()->set_controller_name("example.com/prov");
  v1::QueueObject cq;
  v1::ClusterQueue* c = cq.mutable_cluster_queue();
  c->mutable_metadata()->set_name("cq2");
  c->mutable_spec()->set_cohort_name("all");
  c->mutable_spec()->mutable_namespace_selector();
  v1::ResourceGroup* g = c->mutable_spec()->add_resource_groups();
  g->add_covered_resources("cpu");
  v1::FlavorQuotas* fq = g->add_flavors();
  fq->set_name("default");
  fq->add_resources()->set_name("cpu");
  fq->mutable_resources(0)->set_nominal_quota("2");
  fq->mutable_resources(0)->set_borrowing_limit("1");
  v1::QueueObject lq;
  lq.mutable_local_queue()->mutable_metadata()->set_namespace_("ns");
  lq.mutable_local_queue()->mutable_metadata()->set_name("lq2");
  lq.mutable_local_queue()->mutable_spec()->set_cluster_queue("cq2");
  v1::GetObjectRequest get;
  get.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  get.set_name("cq2");
  v1::ListObjectsRequest list;
  list.set_kind(v1::OBJECT_KIND_LOCAL_QUEUE);
  v1::DeleteObjectRequest del;
  del.set_kind(v1::OBJECT_KIND_LOCAL_QUEUE);
  del.set_name("lq2");
  v1::Workload wl = Job("prio", 1, "500m");
  wl.mutable_spec()->set_queue_name("lq2");
  wl.mutable_spec()->mutable_priority_class_ref()->set_group("kueue.x-k8s.io");
  wl.mutable_spec()->mutable_priority_class_ref()->set_kind("WorkloadPriorityClass");
  wl.mutable_spec()->mutable_priority_class_ref()->set_name("high");
  return Session()
      .Add(Rpc::kApply, Apply(wpc))
      .Add(Rpc::kApply, Apply(cohort))
      .Add(Rpc::kApply, Apply(check))
      .Add(Rpc::kApply, Apply(cq))
      .Add(Rpc::kApply, Apply(lq))
      .Add(Rpc::kSubmit, Submit(wl))
      .Add(Rpc::kGetObject, get)
      .Add(Rpc::kListObjects, list)
      .Add(Rpc::kDeleteObject, del)
      .bytes();
}

// An elastic job scaled up and down.
std::string Elastic() {
  v1::Workload wl = Job("job-e", 2, "1");
  (*wl.mutable_metadata()->mutable_annotations())["kueue.x-k8s.io/elastic-job"] = "true";
  (*wl.mutable_metadata()->mutable_labels())["kueue.x-k8s.io/job-uid"] = "uid-e";
  v1::OwnerReference* owner = wl.mutable_metadata()->add_owner_references();
  owner->set_api_version("batch/v1");
  owner->set_kind("Job");
  owner->set_name("e");
  owner->set_uid("uid-e");
  owner->set_controller(true);
  v1::ResizeRequest up;
  up.set_namespace_("ns");
  up.mutable_job()->set_api_version("batch/v1");
  up.mutable_job()->set_kind("Job");
  up.mutable_job()->set_name("e");
  up.mutable_job()->set_uid("uid-e");
  up.set_generation(2);
  v1::PodSetCount* count = up.add_pod_sets();
  count->set_name("main");
  count->set_count(3);
  v1::ResizeRequest down = up;
  down.set_generation(3);
  down.mutable_pod_sets(0)->set_count(1);
  return Session()
      .Add(Rpc::kSubmit, Submit(wl))
      .Add(Rpc::kResize, up)
      .Add(Rpc::kResize, down)
      .bytes();
}

// Admission checks, deactivation and the clock.
std::string Lifecycle() {
  v1::QueueObject check;
  check.mutable_admission_check()->mutable_metadata()->set_name("prov");
  check.mutable_admission_check()->mutable_spec()->set_controller_name("example.com/prov");
  v1::Workload wl = Job("job-c", 1, "1");
  wl.mutable_spec()->set_maximum_execution_time_seconds(30);
  v1::SetAdmissionCheckStateRequest state = Named<v1::SetAdmissionCheckStateRequest>("job-c");
  state.set_check("prov");
  state.set_state("Retry");
  state.set_requeue_after_seconds(5);
  v1::SetActiveRequest off = Named<v1::SetActiveRequest>("job-c");
  off.set_active(false);
  v1::SetActiveRequest on = off;
  on.set_active(true);
  v1::RunSchedulingCyclesRequest cycles;
  cycles.set_count(2);
  cycles.set_advance_clock_seconds(60);
  v1::WatchRequest watch;
  watch.add_kinds(v1::OBJECT_KIND_WORKLOAD);
  watch.set_namespace_("ns");
  return Session()
      .Add(Rpc::kWatch, watch)
      .Add(Rpc::kApply, Apply(check))
      .Add(Rpc::kSubmit, Submit(wl))
      .Add(Rpc::kSetAdmissionCheckState, state)
      .Add(Rpc::kSetActive, off)
      .Add(Rpc::kSetActive, on)
      .Add(Rpc::kRunSchedulingCycles, cycles)
      .bytes();
}

// A running Kueue's admission taken over.
std::string Import() {
  v1::Workload wl = Job("running", 1, "1");
  v1::Admission* admission = wl.mutable_status()->mutable_admission();
  admission->set_cluster_queue("cq");
  v1::PodSetAssignment* a = admission->add_pod_set_assignments();
  a->set_name("main");
  (*a->mutable_flavors())["cpu"] = "default";
  (*a->mutable_flavors())["memory"] = "default";
  (*a->mutable_resource_usage())["cpu"] = "1";
  (*a->mutable_resource_usage())["memory"] = "512Mi";
  a->set_count(1);
  v1::ImportRequest import;
  *import.add_workloads() = wl;
  return Session().Add(Rpc::kImport, import).bytes();
}

v1::PodObservation Pod(const std::string& name) {
  v1::PodObservation pod;
  pod.set_cluster("c1");
  pod.set_namespace_("ns");
  pod.set_name(name);
  pod.set_uid(name + "-uid");
  pod.set_resource_version(1);
  pod.set_phase(v1::POD_PHASE_PENDING);
  pod.mutable_creation_timestamp()->set_seconds(1700000000);
  (*pod.mutable_labels())[pods::kQueueNameLabel] = "lq";
  (*pod.mutable_labels())[pods::kManagedLabel] = "true";
  pod.add_finalizers(pods::kManagedFinalizer);
  pod.add_scheduling_gates()->set_name(pods::kAdmissionGate);
  v1::Container* c = pod.mutable_spec()->add_containers();
  c->set_name("c");
  (*c->mutable_resources()->mutable_requests())["cpu"] = "1";
  return pod;
}

v1::ReportPodsRequest Report(std::vector<v1::PodObservation> pods) {
  v1::ReportPodsRequest r;
  r.set_cluster("c1");
  for (v1::PodObservation& p : pods) *r.add_pods() = std::move(p);
  return r;
}

// A single pod, admitted, then succeeded.
std::string SinglePod() {
  v1::PodObservation pod = Pod("solo");
  v1::PodObservation done = pod;
  done.set_resource_version(2);
  done.set_phase(v1::POD_PHASE_SUCCEEDED);
  done.clear_scheduling_gates();
  v1::ListDirectivesRequest list;
  list.set_cluster("c1");
  return Session()
      .Add(Rpc::kReportPods, Report({pod}))
      .Add(Rpc::kListDirectives, list)
      .Add(Rpc::kReportPods, Report({done}))
      .bytes();
}

// A plain group of two with its total count; one pod fails and is replaced,
// then deleted.
std::string PodGroup() {
  std::vector<v1::PodObservation> pods;
  for (const char* name : {"g-0", "g-1"}) {
    v1::PodObservation p = Pod(name);
    (*p.mutable_labels())[pods::kGroupNameLabel] = "g";
    (*p.mutable_annotations())[pods::kGroupTotalCountAnnotation] = "2";
    pods.push_back(p);
  }
  v1::PodObservation failed = pods[1];
  failed.set_resource_version(2);
  failed.set_phase(v1::POD_PHASE_FAILED);
  failed.clear_scheduling_gates();
  v1::ReportPodsRequest gone = Report({});
  v1::PodDeletion* d = gone.add_deleted();
  d->set_namespace_("ns");
  d->set_name("g-1");
  return Session()
      .Add(Rpc::kReportPods, Report(pods))
      .Add(Rpc::kReportPods, Report({failed}))
      .Add(Rpc::kReportPods, gone)
      .bytes();
}

// A driver declaring its workers (kueue.x-k8s.io/pod-group-sets), then one
// worker.
std::string DeclaredGroup() {
  v1::PodObservation driver = Pod("driver");
  (*driver.mutable_labels())[pods::kGroupNameLabel] = "spark";
  (*driver.mutable_annotations())[pods::kGroupSetsAnnotation] =
      R"([{"name": "driver", "count": 1}, {"name": "workers", "count": 2, "template": )"
      R"({"spec": {"containers": [{"name": "w", "resources": {"requests": {"cpu": "1"}}}]}}}])";
  v1::PodObservation worker = Pod("w-0");
  (*worker.mutable_labels())[pods::kGroupNameLabel] = "spark";
  (*worker.mutable_labels())[pods::kGroupRoleLabel] = "workers";
  return Session()
      .Add(Rpc::kReportPods, Report({driver}))
      .Add(Rpc::kReportPods, Report({worker}))
      .bytes();
}

bool Write(const std::string& dir, const std::string& name, const std::string& bytes) {
  EngineDriver driver;  // a seed must not crash
  for (const Record& r :
       SplitRecords(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())) {
    driver.Call(static_cast<Rpc>(r.selector % static_cast<uint8_t>(Rpc::kCount)), r.payload);
  }
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out << bytes;
  return static_cast<bool>(out);
}

}  // namespace
}  // namespace admitd::fuzz

int main(int argc, char** argv) {
  using namespace admitd::fuzz;
  if (argc != 2) {
    fprintf(stderr, "usage: make_seeds CORPUS_DIR (fuzz/corpus)\n");
    return 2;
  }
  const std::string root = argv[1];
  const std::string requests = root + "/requests_fuzz", pods = root + "/pods_fuzz";
  bool ok = Write(requests, "basic", Basic()) && Write(requests, "queue_objects", QueueObjects()) &&
            Write(requests, "elastic", Elastic()) && Write(requests, "lifecycle", Lifecycle()) &&
            Write(requests, "import", Import()) && Write(requests, "pods", SinglePod()) &&
            Write(pods, "single_pod", SinglePod()) && Write(pods, "pod_group", PodGroup()) &&
            Write(pods, "declared_group", DeclaredGroup());
  if (!ok) fprintf(stderr, "cannot write under %s (do its folders exist?)\n", root.c_str());
  return ok ? 0 : 1;
}
