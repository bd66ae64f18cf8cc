// The Job webhook's rules: Kueue's error texts exactly, the JSON patches applied to the Job, the
// AdmissionReview answers, and the admitd-backed context's cache (against an in-process
// QueueService).
#include "clients/shim/integrations/job/job_webhook.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <map>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "clients/shim/webhook/admitd_webhook_context.h"
#include "clients/shim/webhook/webhook_server.h"
#include "clients/shim/webhook/webhook_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using webhook_testing::FakeContext;
using webhook_testing::Texts;
using webhook_testing::kDns1123;


// A Job as the API server hands it to the webhook (parallelism and suspend defaulted).
nlohmann::json Job(const nlohmann::json& labels = nlohmann::json::object(),
                   const nlohmann::json& annotations = nlohmann::json::object()) {
  nlohmann::json job = nlohmann::json::parse(R"({
    "apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "job", "namespace": "team-a"},
    "spec": {"parallelism": 4, "completions": 4, "suspend": false, "completionMode": "NonIndexed",
             "template": {"spec": {"restartPolicy": "Never",
                                   "containers": [{"name": "c", "image": "busybox"}]}}}})");
  if (!labels.empty()) job["metadata"]["labels"] = labels;
  if (!annotations.empty()) job["metadata"]["annotations"] = annotations;
  return job;
}

class JobWebhookTest : public ::testing::Test {
 protected:
  std::vector<std::string> Create(const nlohmann::json& job) {
    return Texts(ValidateJobCreate(job, context_, options_));
  }
  std::vector<std::string> Update(const nlohmann::json& old_job, const nlohmann::json& new_job) {
    return Texts(ValidateJobUpdate(old_job, new_job, context_, options_));
  }
  nlohmann::json Defaulted(const nlohmann::json& job) {
    return job.patch(nlohmann::json(DefaultJob(job, context_, options_)));
  }
  FakeContext context_;
  JobWebhookOptions options_;
};

// ---- Field errors -------------------------------------------------------------------------------

TEST(FieldErrorsTest, PrintedAsApimachineryPrintsThem) {
  EXPECT_EQ(FieldError::Invalid("a.b", GoQuote("x"), "bad").ToString(),
            "a.b: Invalid value: \"x\": bad");
  EXPECT_EQ(FieldError::Invalid("a", "5", "d").ToString(), "a: Invalid value: 5: d");
  EXPECT_EQ(FieldError::Invalid("a", "", "d").ToString(), "a: Invalid value: d");
  EXPECT_EQ(FieldError::Forbidden("a", "no").ToString(), "a: Forbidden: no");
  EXPECT_EQ(FieldError::Required("a", "").ToString(), "a: Required value");
  EXPECT_EQ(FieldError::TooLong("a", 63).ToString(), "a: Too long: may not be more than 63 bytes");
  EXPECT_EQ(GoQuote("a\"b\\c\n\x01\x7f\xff é"), R"("a\"b\\c\n\x01\x7f\xff é")");
  EXPECT_EQ(GoQuote("\xc2\xa0"), R"("\u00a0")");
  EXPECT_EQ(JsonQuote("<a&b>\x01\xff"), R"("\u003ca\u0026b\u003e\u0001\ufffd")");
}

TEST(FieldErrorsTest, AggregatedOnceEachInBrackets) {
  const FieldError a = FieldError::Forbidden("a", "x"), b = FieldError::Forbidden("b", "y");
  EXPECT_EQ(AggregateErrors({}), "");
  EXPECT_EQ(AggregateErrors({a}), "a: Forbidden: x");
  EXPECT_EQ(AggregateErrors({a, a}), "a: Forbidden: x");
  EXPECT_EQ(AggregateErrors({a, b, a}), "[a: Forbidden: x, b: Forbidden: y]");
}

TEST(FieldErrorsTest, GoStrconvTexts) {
  std::string error;
  EXPECT_EQ(GoAtoi("+12", &error), 12);
  EXPECT_EQ(GoAtoi("-9223372036854775808", &error), INT64_MIN);
  EXPECT_FALSE(GoAtoi("NaN", &error));
  EXPECT_EQ(error, R"(strconv.Atoi: parsing "NaN": invalid syntax)");
  EXPECT_FALSE(GoAtoi("9223372036854775808", &error));
  EXPECT_EQ(error, R"(strconv.Atoi: parsing "9223372036854775808": value out of range)");
  EXPECT_FALSE(GoParseBool("-", &error));
  EXPECT_EQ(error, R"(strconv.ParseBool: parsing "-": invalid syntax)");
  EXPECT_EQ(GoParseBool("T", &error), true);
  // Only the length is wrong (the pattern does not bound a label's length)...
  EXPECT_THAT(DnsSubdomainErrors(std::string(254, 'a')),
              ElementsAre("must be no more than 253 characters"));
  // ...or both.
  EXPECT_THAT(DnsSubdomainErrors(std::string(254, 'A')),
              ElementsAre("must be no more than 253 characters", kDns1123));
}

// ---- Defaulting ---------------------------------------------------------------------------------

TEST_F(JobWebhookTest, AJobWithAQueueIsSuspended) {
  const nlohmann::json job = Job({{"kueue.x-k8s.io/queue-name", "user-queue"}});
  EXPECT_EQ(nlohmann::json(DefaultJob(job, context_, options_)),
            nlohmann::json::parse(R"([{"op": "add", "path": "/spec/suspend", "value": true}])"));
  EXPECT_EQ(Defaulted(job)["spec"]["suspend"], true);
  nlohmann::json suspended = job;
  suspended["spec"]["suspend"] = true;
  EXPECT_THAT(DefaultJob(suspended, context_, options_), IsEmpty());
  // Without a queue (and no default one) a Job is not Kueue's.
  EXPECT_THAT(DefaultJob(Job(), context_, options_), IsEmpty());
}

TEST_F(JobWebhookTest, AJobForAMultiKueueQueueIsManagedByMultiKueue) {
  context_.multikueue = {"team-a/dispatch", "team-a/default"};
  EXPECT_EQ(Defaulted(Job({{"kueue.x-k8s.io/queue-name", "dispatch"}}))["spec"]["managedBy"],
            "kueue.x-k8s.io/multikueue");
  // The Job controller's own name is replaced; another controller's is kept.
  nlohmann::json job = Job({{"kueue.x-k8s.io/queue-name", "dispatch"}});
  job["spec"]["managedBy"] = "kubernetes.io/job-controller";
  EXPECT_EQ(Defaulted(job)["spec"]["managedBy"], "kueue.x-k8s.io/multikueue");
  job["spec"]["managedBy"] = "example.com/other";
  EXPECT_EQ(Defaulted(job)["spec"]["managedBy"], "example.com/other");
  // A queue of another ClusterQueue, no queue, or a Job owned by a managed kind: untouched.
  EXPECT_FALSE(Defaulted(Job({{"kueue.x-k8s.io/queue-name", "local"}}))["spec"].contains(
      "managedBy"));
  EXPECT_FALSE(Defaulted(Job())["spec"].contains("managedBy"));
  nlohmann::json child = Job({{"kueue.x-k8s.io/queue-name", "dispatch"}});
  child["metadata"]["ownerReferences"] = nlohmann::json::parse(
      R"([{"apiVersion": "batch/v1", "kind": "Job", "name": "p", "uid": "u", "controller": true}])");
  EXPECT_FALSE(Defaulted(child)["spec"].contains("managedBy"));
  // The namespace's default queue counts once step 1 gave it.
  context_.queues = {"team-a"};
  EXPECT_EQ(Defaulted(Job())["spec"]["managedBy"], "kueue.x-k8s.io/multikueue");
}

TEST_F(JobWebhookTest, TheDefaultQueueAndPriorityClassAreLabelled) {
  context_.queues = {"team-a"};
  context_.priority_class = true;
  EXPECT_EQ(nlohmann::json(DefaultJob(Job(), context_, options_)), nlohmann::json::parse(R"([
    {"op": "add", "path": "/metadata/labels",
     "value": {"kueue.x-k8s.io/queue-name": "default", "kueue.x-k8s.io/priority-class": "default"}},
    {"op": "add", "path": "/spec/suspend", "value": true}])"));
  // An existing map gets one operation per key, with '/' escaped.
  const nlohmann::json job = Job({{"team", "a"}});
  EXPECT_EQ(nlohmann::json(DefaultJob(job, context_, options_)), nlohmann::json::parse(R"([
    {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1priority-class", "value": "default"},
    {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "default"},
    {"op": "add", "path": "/spec/suspend", "value": true}])"));
  EXPECT_EQ(Defaulted(job)["metadata"]["labels"],
            nlohmann::json({{"team", "a"},
                            {"kueue.x-k8s.io/queue-name", "default"},
                            {"kueue.x-k8s.io/priority-class", "default"}}));
  // A queue or class already named is kept.
  const nlohmann::json named = Defaulted(
      Job({{"kueue.x-k8s.io/queue-name", "q"}, {"kueue.x-k8s.io/priority-class", "high"}}));
  EXPECT_EQ(named["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "q");
  EXPECT_EQ(named["metadata"]["labels"]["kueue.x-k8s.io/priority-class"], "high");
  options_.workload_priority_class_defaulting = false;
  EXPECT_FALSE(Defaulted(Job())["metadata"]["labels"].contains("kueue.x-k8s.io/priority-class"));
}

TEST_F(JobWebhookTest, UnmanagedNamespacesAndOwnedJobsAreLeftAlone) {
  context_.queues = {"team-a", "kube-system"};
  nlohmann::json system = Job();
  system["metadata"]["namespace"] = "kube-system";
  EXPECT_THAT(DefaultJob(system, context_, options_), IsEmpty());
  // A Job controlled by a Kueue-managed kind belongs to its owner's Workload.
  nlohmann::json child = Job({{"kueue.x-k8s.io/queue-name", "q"}});
  child["metadata"]["ownerReferences"] = {{{"apiVersion", "ray.io/v1"},
                                           {"kind", "RayCluster"},
                                           {"name", "r"},
                                           {"uid", "u"},
                                           {"controller", true}}};
  context_.priority_class = true;
  EXPECT_THAT(DefaultJob(child, context_, options_), IsEmpty());
  child["metadata"]["ownerReferences"][0]["kind"] = "CronJob";
  child["metadata"]["ownerReferences"][0]["apiVersion"] = "batch/v1";
  EXPECT_EQ(Defaulted(child)["spec"]["suspend"], true);
  // A Job being deleted is not suspended.
  nlohmann::json deleting = Job({{"kueue.x-k8s.io/queue-name", "q"}});
  deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_EQ(Defaulted(deleting)["spec"]["suspend"], false);
}

TEST_F(JobWebhookTest, ManageJobsWithoutQueueNameSuspendsInManagedNamespaces) {
  options_.manage_jobs_without_queue_name = true;
  EXPECT_EQ(Defaulted(Job())["spec"]["suspend"], true);
  nlohmann::json system = Job();
  system["metadata"]["namespace"] = "kube-system";
  EXPECT_THAT(DefaultJob(system, context_, options_), IsEmpty());
  nlohmann::json bare = {{"metadata", {{"name", "j"}, {"namespace", "n"}}}};  // no spec at all
  EXPECT_EQ(Defaulted(bare)["spec"], nlohmann::json({{"suspend", true}}));
}

TEST_F(JobWebhookTest, AnElasticJobsPodsStartGatedOnce) {
  const nlohmann::json elastic =
      Job({{"kueue.x-k8s.io/queue-name", "q"}}, {{"kueue.x-k8s.io/elastic-job", "true"}});
  const nlohmann::json gate = {{"name", "kueue.x-k8s.io/elastic-job"}};
  EXPECT_EQ(
      nlohmann::json(DefaultJob(elastic, context_, options_))[1],
      nlohmann::json(
          {{"op", "add"}, {"path", "/spec/template/spec/schedulingGates"}, {"value", {gate}}}));
  nlohmann::json gated = Defaulted(elastic);
  EXPECT_EQ(gated["spec"]["template"]["spec"]["schedulingGates"], nlohmann::json::array({gate}));
  EXPECT_THAT(DefaultJob(gated, context_, options_), IsEmpty());
  nlohmann::json other = elastic;
  other["spec"]["template"]["spec"]["schedulingGates"] = {{{"name", "x"}}};
  EXPECT_EQ(Defaulted(other)["spec"]["template"]["spec"]["schedulingGates"],
            nlohmann::json::array({{{"name", "x"}}, gate}));
  nlohmann::json no_template = elastic;
  no_template["spec"].erase("template");
  EXPECT_EQ(Defaulted(no_template)["spec"]["template"],
            nlohmann::json({{"spec", {{"schedulingGates", {gate}}}}}));
  options_.elastic_jobs = false;
  EXPECT_FALSE(Defaulted(elastic)["spec"]["template"]["spec"].contains("schedulingGates"));
}

// ---- Validation on CREATE
// ------------------------------------------------------------------------

TEST_F(JobWebhookTest, NamesAndLabelsOnCreate) {
  EXPECT_THAT(Create(Job({{"kueue.x-k8s.io/queue-name", "user-queue"}})), IsEmpty());
  EXPECT_THAT(Create(Job({{"kueue.x-k8s.io/queue-name", "queue name"}})),
              ElementsAre(absl::StrCat("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "
                                       "\"queue name\": ",
                                       kDns1123)));
  EXPECT_THAT(Create(Job({{"kueue.x-k8s.io/queue-name", std::string(254, 'Q')}})),
              ElementsAre(absl::StrCat(
                  "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"",
                  std::string(254, 'Q'), "\": must be no more than 253 characters,", kDns1123)));
  EXPECT_THAT(
      Create(Job({}, {{"kueue.x-k8s.io/prebuilt-workload-name", "workload name"}})),
      ElementsAre(absl::StrCat("metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]: "
                               "Invalid value: \"workload name\": ",
                               kDns1123)));
  EXPECT_THAT(Create(Job({{"kueue.x-k8s.io/prebuilt-workload-name", "workload name"}})),
              ElementsAre(absl::StrCat("metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: "
                                       "Invalid value: \"workload name\": ",
                                       kDns1123)));
  EXPECT_THAT(Create(Job({{"kueue.x-k8s.io/max-exec-time-seconds", "NaN"}})),
              ElementsAre("metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: "
                          "\"NaN\": strconv.Atoi: parsing \"NaN\": invalid syntax"));
  EXPECT_THAT(Create(Job({{"kueue.x-k8s.io/max-exec-time-seconds", "-10"}})),
              ElementsAre("metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: "
                          "-10: should be greater than 0"));
  // Several errors are aggregated in Kueue's order.
  EXPECT_EQ(
      AggregateErrors(ValidateJobCreate(
          Job({{"kueue.x-k8s.io/queue-name", "Q"}, {"kueue.x-k8s.io/max-exec-time-seconds", "0"}}),
          context_, options_)),
      absl::StrCat("[metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"Q\": ", kDns1123,
                   ", metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: "
                   "0: should be greater than 0]"));
}

TEST_F(JobWebhookTest, PartialAdmissionOnCreate) {
  const char* path = "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]";
  EXPECT_THAT(Create(Job({}, {{"kueue.x-k8s.io/job-min-parallelism", "3"}})), IsEmpty());
  EXPECT_THAT(Create(Job({}, {{"kueue.x-k8s.io/job-min-parallelism", "NaN"}})),
              ElementsAre(absl::StrCat(path,
                                       ": Invalid value: \"NaN\": strconv.Atoi: parsing "
                                       "\"NaN\": invalid syntax")));
  EXPECT_THAT(Create(Job({}, {{"kueue.x-k8s.io/job-min-parallelism", "5"}})),
              ElementsAre(absl::StrCat(path, ": Invalid value: 5: should be between 0 and 3")));
  nlohmann::json capped = Job({}, {{"kueue.x-k8s.io/job-min-parallelism", "0"}});
  capped["spec"]["completions"] = 2;  // the pod count is min(parallelism, completions)
  EXPECT_THAT(Create(capped),
              ElementsAre(absl::StrCat(path, ": Invalid value: 0: should be between 0 and 1")));
  EXPECT_THAT(Create(Job({}, {{"kueue.x-k8s.io/job-min-parallelism", "2"},
                              {"kueue.x-k8s.io/elastic-job", "true"}})),
              ElementsAre(absl::StrCat(path,
                                       ": Invalid value: \"2\": partial admission and "
                                       "elastic job cannot be used together")));
}

TEST_F(JobWebhookTest, CompletionsEqualParallelismOnCreate) {
  const char* path = "metadata.annotations[kueue.x-k8s.io/job-completions-equal-parallelism]";
  const nlohmann::json sync = {{"kueue.x-k8s.io/job-completions-equal-parallelism", "true"}};
  EXPECT_THAT(Create(Job({}, {{"kueue.x-k8s.io/job-completions-equal-parallelism", "-"}})),
              ElementsAre(absl::StrCat(path,
                                       ": Invalid value: \"-\": strconv.ParseBool: parsing "
                                       "\"-\": invalid syntax")));
  EXPECT_THAT(Create(Job({}, sync)),
              ElementsAre(absl::StrCat(path,
                                       ": Invalid value: \"true\": should not be enabled for "
                                       "NonIndexed jobs")));
  nlohmann::json indexed = Job({}, sync);
  indexed["spec"]["completionMode"] = "Indexed";
  EXPECT_THAT(Create(indexed), IsEmpty());
  indexed["spec"]["completions"] = 6;
  EXPECT_THAT(Create(indexed),
              ElementsAre("spec.completions: Invalid value: 6: should be equal to parallelism when "
                          "kueue.x-k8s.io/job-completions-equal-parallelism annotation is true"));
  indexed["spec"].erase("completions");
  EXPECT_THAT(
      Create(indexed),
      ElementsAre("spec.completions: Invalid value: null: should be equal to parallelism "
                  "when kueue.x-k8s.io/job-completions-equal-parallelism annotation is true"));
}

TEST_F(JobWebhookTest, TopologyAnnotationsOnCreate) {
  nlohmann::json job = Job({}, {{"kueue.x-k8s.io/elastic-job", "true"}});
  nlohmann::json& annotations = job["spec"]["template"]["metadata"]["annotations"];
  annotations = {{"kueue.x-k8s.io/podset-required-topology", "cloud.com/block"}};
  EXPECT_THAT(Create(job), ElementsAre("spec.template.metadata.annotations.kueue.x-k8s.io/"
                                       "podset-required-topology: Forbidden: required topology is "
                                       "not supported with elastic jobs"));
  annotations = {{"kueue.x-k8s.io/podset-preferred-topology", "cloud.com/block"}};
  EXPECT_THAT(Create(job), ElementsAre("spec.template.metadata.annotations.kueue.x-k8s.io/"
                                       "podset-preferred-topology: Forbidden: preferred topology "
                                       "is not supported with elastic jobs"));
  annotations = {{"kueue.x-k8s.io/podset-unconstrained-topology", "true"}};
  EXPECT_THAT(Create(job), IsEmpty());
  annotations = {{"kueue.x-k8s.io/podset-required-topology", "cloud.com/block"},
                 {"kueue.x-k8s.io/podset-preferred-topology", "cloud.com/block"}};
  EXPECT_THAT(
      Create(job),
      ElementsAre("spec.template.metadata.annotations: Invalid value: must not contain more "
                  "than one topology annotation: [\"kueue.x-k8s.io/podset-required-topology\", "
                  "\"kueue.x-k8s.io/podset-preferred-topology\", "
                  "\"kueue.x-k8s.io/podset-unconstrained-topology\"]"));
  annotations = {{"kueue.x-k8s.io/podset-required-topology", "cloud.com/block"},
                 {"kueue.x-k8s.io/podset-slice-required-topology", "cloud.com/rack"}};
  EXPECT_THAT(Create(job),
              ElementsAre("spec.template.metadata.annotations[kueue.x-k8s.io/podset-slice-size]: "
                          "Required value: must be set when "
                          "'kueue.x-k8s.io/podset-slice-required-topology' is specified"));
  annotations["kueue.x-k8s.io/podset-slice-size"] = "0";
  EXPECT_THAT(Create(job),
              ElementsAre("spec.template.metadata.annotations[kueue.x-k8s.io/podset-slice-size]: "
                          "Invalid value: \"0\": must be greater than or equal to 1"));
  job["metadata"]["annotations"].erase("kueue.x-k8s.io/elastic-job");
  annotations["kueue.x-k8s.io/podset-slice-size"] = "5";
  EXPECT_THAT(Create(job),
              ElementsAre("spec.template.metadata.annotations[kueue.x-k8s.io/podset-slice-size]: "
                          "Invalid value: \"5\": must not be greater than pod set count 4"));
  annotations = {{"kueue.x-k8s.io/podset-required-topology", "some required value"}};
  EXPECT_THAT(
      Create(job),
      ElementsAre("spec.template.metadata.annotations[kueue.x-k8s.io/podset-required-topology]: "
                  "Invalid value: \"some required value\": name part must consist of "
                  "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
                  "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"));
  options_.topology_aware_scheduling = false;
  EXPECT_THAT(Create(job), IsEmpty());
}

TEST_F(JobWebhookTest, AdmissionGatedByOnCreate) {
  const char* path = "metadata.annotations[kueue.x-k8s.io/admission-gated-by]";
  const auto gated = [](const std::string& v) {
    return Job({}, {{"kueue.x-k8s.io/admission-gated-by", v}});
  };
  EXPECT_THAT(Create(gated("example.com/a, example.com/b")), IsEmpty());
  EXPECT_THAT(Create(gated("this is an invalid value")),
              ElementsAre(absl::StrCat(path,
                                       ": Invalid value: \"this is an invalid value\": must "
                                       "be a domain-prefixed path (such as \"acme.io/foo\")")));
  EXPECT_THAT(Create(gated("a.io/x,a.io/x")),
              ElementsAre(absl::StrCat(path,
                                       ": Invalid value: \"a.io/x,a.io/x\": duplicate gate "
                                       "name: a.io/x")));
  EXPECT_THAT(Create(gated("a.io/x,,a.io/y")),
              ElementsAre(absl::StrCat(path,
                                       ": Invalid value: \"a.io/x,,a.io/y\": cannot contain "
                                       "empty gate names")));
  EXPECT_THAT(Create(gated("a.io/" + std::string(60, 'x'))),
              ElementsAre(absl::StrCat(path, ": Too long: may not be more than 63 bytes")));
  EXPECT_THAT(Create(gated("example .com/x")),
              ElementsAre(absl::StrCat(path, ": Invalid value: \"example .com\": ", kDns1123)));
  options_.admission_gated_by = false;
  EXPECT_THAT(Create(gated("this is an invalid value")), IsEmpty());
}

// ---- Validation on UPDATE
// ------------------------------------------------------------------------

TEST_F(JobWebhookTest, QueueNameOnUpdate) {
  nlohmann::json old_job = Job({{"kueue.x-k8s.io/queue-name", "queue"}});
  nlohmann::json new_job = Job({{"kueue.x-k8s.io/queue-name", "queue2"}});
  EXPECT_THAT(Update(old_job, new_job),
              ElementsAre("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"queue2\": "
                          "field is immutable"));
  new_job["spec"]["suspend"] = true;  // a suspended Job may move to another queue
  EXPECT_THAT(Update(old_job, new_job), IsEmpty());
  new_job["metadata"]["annotations"] = {{"kueue.x-k8s.io/stopping", "true"}};  // not suspended yet
  EXPECT_THAT(Update(old_job, new_job), ::testing::SizeIs(1));
  // Dropping the queue in a namespace with a default one.
  context_.queues = {"team-a"};
  new_job = Job();
  new_job["spec"]["suspend"] = true;
  EXPECT_THAT(Update(old_job, new_job),
              ElementsAre("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"\": "
                          "queue-name must not be empty in namespace with default queue"));
}

TEST_F(JobWebhookTest, PriorityClassMaxExecTimeAndPrebuiltOnUpdate) {
  const char* wpc = "metadata.labels[kueue.x-k8s.io/priority-class]";
  EXPECT_THAT(Update(Job(), Job({{"kueue.x-k8s.io/priority-class", "test"}})),
              ElementsAre(absl::StrCat(wpc,
                                       ": Invalid value: \"test\": WorkloadPriorityClass "
                                       "cannot be added to a non-suspended workload")));
  nlohmann::json suspended = Job({{"kueue.x-k8s.io/priority-class", "test"}});
  suspended["spec"]["suspend"] = true;
  EXPECT_THAT(Update(Job(), suspended), IsEmpty());
  suspended["metadata"].erase("labels");
  EXPECT_THAT(Update(Job({{"kueue.x-k8s.io/priority-class", "test"}}), suspended),
              ElementsAre(absl::StrCat(wpc,
                                       ": Invalid value: \"\": WorkloadPriorityClass cannot "
                                       "be removed from a workload")));
  EXPECT_THAT(Update(Job({{"kueue.x-k8s.io/priority-class", "a"}}),
                     Job({{"kueue.x-k8s.io/priority-class", "b"}})),
              IsEmpty());

  EXPECT_THAT(Update(Job({{"kueue.x-k8s.io/max-exec-time-seconds", "10"}}),
                     Job({{"kueue.x-k8s.io/max-exec-time-seconds", "20"}})),
              ElementsAre("metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: "
                          "\"20\": field is immutable"));
  nlohmann::json old_exec = Job({{"kueue.x-k8s.io/max-exec-time-seconds", "10"}});
  nlohmann::json new_exec = Job({{"kueue.x-k8s.io/max-exec-time-seconds", "20"}});
  old_exec["spec"]["suspend"] = new_exec["spec"]["suspend"] = true;
  EXPECT_THAT(Update(old_exec, new_exec), IsEmpty());

  EXPECT_THAT(Update(Job({}, {{"kueue.x-k8s.io/prebuilt-workload-name", "a"}}),
                     Job({}, {{"kueue.x-k8s.io/prebuilt-workload-name", "b"}})),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]: Invalid "
                          "value: \"b\": field is immutable"));
  EXPECT_THAT(Update(Job({}, {{"kueue.x-k8s.io/prebuilt-workload-name", "a"},
                              {"kueue.x-k8s.io/elastic-job", "true"}}),
                     Job({}, {{"kueue.x-k8s.io/prebuilt-workload-name", "b"},
                              {"kueue.x-k8s.io/elastic-job", "true"}})),
              IsEmpty());
}

TEST_F(JobWebhookTest, ElasticPartialAdmissionAndGatesOnUpdate) {
  EXPECT_THAT(Update(Job(), Job({}, {{"kueue.x-k8s.io/elastic-job", "true"}})),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/elastic-job]: Invalid value: true: "
                          "field is immutable"));
  EXPECT_THAT(Update(Job({}, {{"kueue.x-k8s.io/elastic-job", "true"}}), Job()),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/elastic-job]: Invalid value: false: "
                          "field is immutable"));

  const nlohmann::json partial = Job({}, {{"kueue.x-k8s.io/job-min-parallelism", "2"}});
  nlohmann::json scaled = partial;
  scaled["spec"]["parallelism"] = 3;
  EXPECT_THAT(Update(partial, scaled),
              ElementsAre("spec.parallelism: Forbidden: cannot change when partial admission is "
                          "enabled and the job is not suspended"));
  nlohmann::json old_suspended = partial;
  old_suspended["spec"]["suspend"] = true;
  EXPECT_THAT(Update(old_suspended, scaled), IsEmpty());
  // An unchanged min-parallelism is not checked again.
  nlohmann::json grown = Job({}, {{"kueue.x-k8s.io/job-min-parallelism", "9"}});
  EXPECT_THAT(Update(grown, grown), IsEmpty());

  nlohmann::json indexed = Job();
  indexed["spec"]["completionMode"] = "Indexed";
  nlohmann::json synced = indexed;
  synced["metadata"]["annotations"] = {
      {"kueue.x-k8s.io/job-completions-equal-parallelism", "true"}};
  EXPECT_THAT(Update(indexed, synced),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/job-completions-equal-parallelism]: "
                          "Forbidden: field is immutable while the job is not suspended"));

  const char* gates = "metadata.annotations[kueue.x-k8s.io/admission-gated-by]";
  EXPECT_THAT(
      Update(Job(), Job({}, {{"kueue.x-k8s.io/admission-gated-by", "a.io/x"}})),
      ElementsAre(absl::StrCat(gates, ": Forbidden: cannot add admission gate after creation")));
  EXPECT_THAT(
      Update(Job({}, {{"kueue.x-k8s.io/admission-gated-by", "a.io/x"}}),
             Job({}, {{"kueue.x-k8s.io/admission-gated-by", "a.io/x,a.io/y"}})),
      ElementsAre(absl::StrCat(gates, ": Forbidden: can only remove gates, not add new ones")));
  EXPECT_THAT(Update(Job({}, {{"kueue.x-k8s.io/admission-gated-by", "a.io/x,a.io/y"}}),
                     Job({}, {{"kueue.x-k8s.io/admission-gated-by", "a.io/y"}})),
              IsEmpty());
}

// ---- AdmissionReview answers
// ---------------------------------------------------------------------

std::string ReviewBody(const std::string& operation, const nlohmann::json& object,
                       const nlohmann::json& old_object = nullptr) {
  return nlohmann::json{{"apiVersion", "admission.k8s.io/v1"},
                        {"kind", "AdmissionReview"},
                        {"request",
                         {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
                          {"namespace", "team-a"},
                          {"operation", operation},
                          {"object", object},
                          {"oldObject", old_object}}}}
      .dump();
}

TEST_F(JobWebhookTest, AdmissionReviewAnswers) {
  EXPECT_EQ(AnswerJobReview("/mutate-batch-v1-job", "nope", context_, options_).http_status, 400);
  EXPECT_EQ(
      AnswerJobReview("/mutate-batch-v1-job", R"({"kind": "Pod"})", context_, options_).http_status,
      400);

  nlohmann::json job = Job();
  job["metadata"].erase("namespace");  // the request's namespace stands in
  context_.queues = {"team-a"};
  WebhookReply mutate =
      AnswerJobReview("/mutate-batch-v1-job", ReviewBody("CREATE", job), context_, options_);
  ASSERT_EQ(mutate.http_status, 200);
  const nlohmann::json& response = mutate.body["response"];
  EXPECT_EQ(mutate.body["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(mutate.body["kind"], "AdmissionReview");
  EXPECT_EQ(response["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(response["allowed"], true);
  EXPECT_EQ(response["patchType"], "JSONPatch");
  std::string patch;
  ASSERT_TRUE(absl::Base64Unescape(response["patch"].get<std::string>(), &patch));
  const nlohmann::json patched = job.patch(nlohmann::json::parse(patch));
  EXPECT_EQ(patched["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "default");
  EXPECT_EQ(patched["spec"]["suspend"], true);
  context_.queues.clear();
  job["spec"]["suspend"] = true;
  mutate = AnswerJobReview("/mutate-batch-v1-job", ReviewBody("CREATE", job), context_, options_);
  EXPECT_FALSE(mutate.body["response"].contains("patchType"));
  EXPECT_EQ(mutate.body["response"]["allowed"], true);

  WebhookReply validate =
      AnswerJobReview("/validate-batch-v1-job",
                      ReviewBody("CREATE", Job({}, {{"kueue.x-k8s.io/job-min-parallelism", "9"}})),
                      context_, options_);
  EXPECT_EQ(validate.body["response"]["allowed"], false);
  EXPECT_EQ(validate.body["response"]["status"]["code"], 403);
  EXPECT_EQ(validate.body["response"]["status"]["reason"], "Forbidden");
  EXPECT_EQ(validate.body["response"]["status"]["message"],
            "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: 9: should "
            "be between 0 and 3");
  validate = AnswerJobReview("/validate-batch-v1-job",
                             ReviewBody("UPDATE", Job({{"kueue.x-k8s.io/queue-name", "b"}}),
                                        Job({{"kueue.x-k8s.io/queue-name", "a"}})),
                             context_, options_);
  EXPECT_EQ(validate.body["response"]["status"]["message"],
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"b\": field is immutable");
  validate =
      AnswerJobReview("/validate-batch-v1-job", ReviewBody("UPDATE", Job()), context_, options_);
  EXPECT_EQ(validate.body["response"]["allowed"], false);  // no oldObject to compare with
  EXPECT_EQ(validate.body["response"]["status"]["code"], 400);
  validate = AnswerJobReview("/validate-batch-v1-job", ReviewBody("DELETE", nullptr, Job()),
                             context_, options_);
  EXPECT_EQ(validate.body["response"]["allowed"], true);
}

// ---- The admitd-backed context
// -------------------------------------------------------------------

// QueueService answering Get from a set of existing objects and counting the calls.
class FakeQueueService : public v1::QueueService::Service {
 public:
  grpc::Status Get(grpc::ServerContext*, const v1::GetObjectRequest* request,
                   v1::QueueObject* response) override {
    ++gets;
    if (request->namespace_() == "broken")
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "down");
    const std::string key =
        absl::StrCat(request->kind(), "/", request->namespace_(), "/", request->name());
    if (auto it = objects.find(key); it != objects.end()) {
      *response = it->second;
      return grpc::Status::OK;
    }
    if (existing.count(key) == 0) return grpc::Status(grpc::StatusCode::NOT_FOUND, "not found");
    return grpc::Status::OK;
  }
  std::set<std::string> existing;
  std::map<std::string, v1::QueueObject> objects;  // answered whole
  std::atomic<int> gets{0};
};

TEST(AdmitdWebhookContextTest, AsksAdmitdAndRemembersTheAnswerForAWhile) {
  FakeQueueService service;
  service.existing = {absl::StrCat(v1::OBJECT_KIND_LOCAL_QUEUE, "/team-a/default"),
                      absl::StrCat(v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS, "//default")};
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(port, 0);
  auto stub = v1::QueueService::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  absl::Time now = absl::FromUnixSeconds(1000);
  AdmitdWebhookContext context(*stub, {.cache_ttl = absl::Seconds(5),
                                       .excluded_namespaces = {"kube-system", "infra"},
                                       .now = [&] { return now; }});
  EXPECT_TRUE(context.DefaultLocalQueueExists("team-a"));
  EXPECT_FALSE(context.DefaultLocalQueueExists("team-b"));
  EXPECT_TRUE(context.DefaultPriorityClassExists());
  EXPECT_EQ(service.gets, 3);
  now += absl::Seconds(4);
  EXPECT_TRUE(context.DefaultLocalQueueExists("team-a"));
  EXPECT_FALSE(context.DefaultLocalQueueExists("team-b"));
  EXPECT_EQ(service.gets, 3);
  now += absl::Seconds(2);
  service.existing.insert(absl::StrCat(v1::OBJECT_KIND_LOCAL_QUEUE, "/team-b/default"));
  EXPECT_TRUE(context.DefaultLocalQueueExists("team-b"));
  EXPECT_EQ(service.gets, 4);
  // An error is "no" and asked again next time.
  EXPECT_FALSE(context.DefaultLocalQueueExists("broken"));
  EXPECT_FALSE(context.DefaultLocalQueueExists("broken"));
  EXPECT_EQ(service.gets, 6);
  EXPECT_FALSE(context.NamespaceManaged("infra"));
  EXPECT_TRUE(context.NamespaceManaged("team-a"));
  EXPECT_THAT(AdmitdWebhookContext::ParseNamespaceList(" kube-system, ,infra"),
              ElementsAre("kube-system", "infra"));
  server->Shutdown();
}

TEST(AdmitdWebhookContextTest, FollowsALocalQueueToItsClusterQueuesMultiKueueCheck) {
  FakeQueueService service;
  auto lq = [&](const std::string& name, const std::string& cq) {
    v1::QueueObject o;
    o.mutable_local_queue()->mutable_spec()->set_cluster_queue(cq);
    service.objects[absl::StrCat(v1::OBJECT_KIND_LOCAL_QUEUE, "/team/", name)] = o;
  };
  auto cq = [&](const std::string& name, const std::vector<std::string>& checks) {
    v1::QueueObject o;
    for (const std::string& c : checks) {
      o.mutable_cluster_queue()->mutable_spec()->mutable_admission_checks_strategy()
          ->add_admission_checks()->set_name(c);
    }
    service.objects[absl::StrCat(v1::OBJECT_KIND_CLUSTER_QUEUE, "//", name)] = o;
  };
  auto ac = [&](const std::string& name, const std::string& controller) {
    v1::QueueObject o;
    o.mutable_admission_check()->mutable_spec()->set_controller_name(controller);
    service.objects[absl::StrCat(v1::OBJECT_KIND_ADMISSION_CHECK, "//", name)] = o;
  };
  lq("dispatch", "mk-cq");
  lq("local", "plain-cq");
  cq("mk-cq", {"missing", "prov", "mk"});
  cq("plain-cq", {"prov"});
  ac("prov", "kueue.x-k8s.io/provisioning-request");
  ac("mk", "kueue.x-k8s.io/multikueue");
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  auto stub = v1::QueueService::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  absl::Time now = absl::FromUnixSeconds(1000);
  AdmitdWebhookContext context(*stub, {.now = [&] { return now; }});
  EXPECT_TRUE(context.LocalQueueUsesMultiKueue("team", "dispatch"));
  EXPECT_FALSE(context.LocalQueueUsesMultiKueue("team", "local"));
  EXPECT_FALSE(context.LocalQueueUsesMultiKueue("team", "none"));
  const int gets = service.gets;
  EXPECT_TRUE(context.LocalQueueUsesMultiKueue("team", "dispatch"));  // remembered
  EXPECT_EQ(service.gets, gets);
  server->Shutdown();
}

}  // namespace
}  // namespace admitd::shim
