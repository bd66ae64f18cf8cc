#include "server/engine/validation.h"

#include <functional>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::engine {
namespace {

using ::testing::Contains;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

MATCHER_P2(Violation, field, description, "") {
  return arg.field == field && arg.description == description;
}

std::string Describe(const Violations& v) {
  std::string out;
  for (const FieldViolation& f : v) out += f.field + ": " + f.description + "\n";
  return out;
}

// ---- Workloads ----------------------------------------------------------------------------

v1::Workload GoodWorkload() {
  v1::Workload wl;
  wl.mutable_metadata()->set_namespace_("team-a");
  wl.mutable_metadata()->set_name("job-1");
  wl.mutable_spec()->set_queue_name("lq");
  v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
  ps->set_name("main");
  ps->set_count(2);
  v1::Container* c = ps->mutable_template_()->mutable_spec()->add_containers();
  (*c->mutable_resources()->mutable_requests())["cpu"] = "500m";
  (*c->mutable_resources()->mutable_limits())["cpu"] = "1";
  (*c->mutable_resources()->mutable_requests())["memory"] = "1Gi";
  return wl;
}

struct WorkloadCase {
  std::string name;
  std::function<void(v1::Workload*)> mutate;
  std::string field;
  std::string description;
};

class WorkloadValidationTest : public ::testing::TestWithParam<WorkloadCase> {};

TEST_P(WorkloadValidationTest, ReportsTheFieldAndKueuesWords) {
  v1::Workload wl = GoodWorkload();
  GetParam().mutate(&wl);
  const Violations v = ValidateWorkload(wl, 18);
  EXPECT_THAT(v, Contains(Violation(GetParam().field, GetParam().description))) << Describe(v);
}

v1::Container* Container(v1::Workload* wl, int pod_set = 0) {
  return wl->mutable_spec()->mutable_pod_sets(pod_set)->mutable_template_()->mutable_spec()
      ->mutable_containers(0);
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, WorkloadValidationTest,
    ::testing::Values(
        WorkloadCase{"NegativeCount", [](v1::Workload* w) {
                       w->mutable_spec()->mutable_pod_sets(0)->set_count(-1);
                     },
                     "spec.podSets[0].count",
                     "Invalid value: -1: must be greater than or equal to 0"},
        WorkloadCase{"NameTooLong", [](v1::Workload* w) {
                       w->mutable_metadata()->set_name(std::string(254, 'a'));
                     },
                     "metadata.name",
                     "Invalid value: \"aaaaaaaaaaaaaaaa\"...: must be no more than 253 "
                     "characters"},
        WorkloadCase{"NameNotASubdomain", [](v1::Workload* w) {
                       w->mutable_metadata()->set_name("Job_1");
                     },
                     "metadata.name",
                     "Invalid value: \"Job_1\": a lowercase RFC 1123 subdomain must consist of "
                     "lower case alphanumeric characters, '-' or '.', and must start and end "
                     "with an alphanumeric character (e.g. 'example.com', regex used for "
                     "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-"
                     "9])?)*')"},
        WorkloadCase{"NamespaceNotALabel", [](v1::Workload* w) {
                       w->mutable_metadata()->set_namespace_("a.b");
                     },
                     "metadata.namespace",
                     "Invalid value: \"a.b\": a lowercase RFC 1123 label must consist of lower "
                     "case alphanumeric characters or '-', and must start and end with an "
                     "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                     "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"},
        WorkloadCase{"MissingNamespace",
                     [](v1::Workload* w) { w->mutable_metadata()->clear_namespace_(); },
                     "metadata.namespace", "Required value: name is required"},
        WorkloadCase{"NoPodSets",
                     [](v1::Workload* w) { w->mutable_spec()->clear_pod_sets(); },
                     "spec.podSets", "Required value: at least one pod set"},
        WorkloadCase{"TooManyPodSets", [](v1::Workload* w) {
                       for (int i = 1; i < 19; ++i) {
                         v1::PodSet* ps = w->mutable_spec()->add_pod_sets();
                         *ps = w->spec().pod_sets(0);
                         ps->set_name("ps-" + std::to_string(i));
                       }
                     },
                     "spec.podSets", "Too many: 19: must have at most 18 items"},
        WorkloadCase{"DuplicatePodSetNames", [](v1::Workload* w) {
                       *w->mutable_spec()->add_pod_sets() = w->spec().pod_sets(0);
                     },
                     "spec.podSets[1].name", "Duplicate value: \"main\""},
        WorkloadCase{"PodSetNameTooLong", [](v1::Workload* w) {
                       w->mutable_spec()->mutable_pod_sets(0)->set_name(std::string(64, 'p'));
                     },
                     "spec.podSets[0].name",
                     "Invalid value: \"pppppppppppppppp\"...: must be no more than 63 "
                     "characters"},
        WorkloadCase{"MinCountAboveCount", [](v1::Workload* w) {
                       w->mutable_spec()->mutable_pod_sets(0)->set_min_count(3);
                     },
                     "spec.podSets[0].minCount",
                     "Invalid value: 3: must be between 1 and the pod set's count (2)"},
        WorkloadCase{"MinCountZero", [](v1::Workload* w) {
                       w->mutable_spec()->mutable_pod_sets(0)->set_min_count(0);
                     },
                     "spec.podSets[0].minCount",
                     "Invalid value: 0: must be between 1 and the pod set's count (2)"},
        WorkloadCase{"TwoPodSetsWithMinCount", [](v1::Workload* w) {
                       w->mutable_spec()->mutable_pod_sets(0)->set_min_count(1);
                       v1::PodSet* ps = w->mutable_spec()->add_pod_sets();
                       *ps = w->spec().pod_sets(0);
                       ps->set_name("workers");
                     },
                     "spec.podSets", "at most one podSet can use minCount"},
        WorkloadCase{"PodsIsReserved", [](v1::Workload* w) {
                       (*Container(w)->mutable_resources()->mutable_requests())["pods"] = "1";
                     },
                     "spec.podSets[0].template.spec.containers[0].resources[pods]",
                     "Invalid value: \"pods\": the key is reserved for internal kueue use"},
        WorkloadCase{"InvalidQuantity", [](v1::Workload* w) {
                       (*Container(w)->mutable_resources()->mutable_requests())["cpu"] = "1x";
                     },
                     "spec.podSets[0].template.spec.containers[0].resources.requests[cpu]",
                     "Invalid value: \"1x\": quantities must match the regular expression "
                     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
        WorkloadCase{"NegativeQuantity", [](v1::Workload* w) {
                       (*Container(w)->mutable_resources()->mutable_requests())["memory"] = "-1Gi";
                     },
                     "spec.podSets[0].template.spec.containers[0].resources.requests[memory]",
                     "Invalid value: \"-1Gi\": must be greater than or equal to 0"},
        WorkloadCase{"RequestAboveLimit", [](v1::Workload* w) {
                       (*Container(w)->mutable_resources()->mutable_requests())["cpu"] = "2";
                     },
                     "spec.podSets[0].template.spec.containers[0].resources.requests[cpu]",
                     "Invalid value: \"2\": must be less than or equal to cpu limit of 1"},
        WorkloadCase{"InitContainerQuantity", [](v1::Workload* w) {
                       v1::Container* c = w->mutable_spec()->mutable_pod_sets(0)
                                              ->mutable_template_()->mutable_spec()
                                              ->add_init_containers();
                       (*c->mutable_resources()->mutable_limits())["cpu"] = "abc";
                     },
                     "spec.podSets[0].template.spec.initContainers[0].resources.limits[cpu]",
                     "Invalid value: \"abc\": quantities must match the regular expression "
                     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
        WorkloadCase{"OverheadQuantity", [](v1::Workload* w) {
                       (*w->mutable_spec()->mutable_pod_sets(0)->mutable_template_()
                             ->mutable_spec()->mutable_overhead())["cpu"] = "-100m";
                     },
                     "spec.podSets[0].template.spec.overhead[cpu]",
                     "Invalid value: \"-100m\": must be greater than or equal to 0"},
        WorkloadCase{"NoQueueName", [](v1::Workload* w) { w->mutable_spec()->clear_queue_name(); },
                     "spec.queueName", "Required value: the LocalQueue to queue in"},
        WorkloadCase{"ZeroMaximumExecutionTime", [](v1::Workload* w) {
                       w->mutable_spec()->set_maximum_execution_time_seconds(0);
                     },
                     "spec.maximumExecutionTimeSeconds",
                     "Invalid value: 0: must be greater than or equal to 1"},
        WorkloadCase{"BadTolerationOperator", [](v1::Workload* w) {
                       w->mutable_spec()->mutable_pod_sets(0)->mutable_template_()
                           ->mutable_spec()->add_tolerations()->set_operator_("Matches");
                     },
                     "spec.podSets[0].template.spec.tolerations[0].operator",
                     "Unsupported value: \"Matches\": supported values: \"Equal\", \"Exists\""}),
    [](const ::testing::TestParamInfo<WorkloadCase>& info) { return info.param.name; });

TEST(WorkloadValidation, AGoodWorkloadPasses) {
  EXPECT_THAT(ValidateWorkload(GoodWorkload(), 18), IsEmpty());
}

TEST(WorkloadValidation, EveryViolationAtOnceInAStableOrder) {
  v1::Workload wl = GoodWorkload();
  wl.mutable_metadata()->set_name("");
  wl.mutable_spec()->mutable_pod_sets(0)->set_count(-3);
  (*Container(&wl)->mutable_resources()->mutable_requests())["memory"] = "lots";
  (*Container(&wl)->mutable_resources()->mutable_requests())["cpu"] = "5";
  const Violations first = ValidateWorkload(wl, 18);
  ASSERT_EQ(first.size(), 4u) << Describe(first);
  EXPECT_EQ(first[0].field, "metadata.name");
  EXPECT_EQ(first[1].field, "spec.podSets[0].count");
  EXPECT_EQ(Describe(ValidateWorkload(wl, 18)), Describe(first));
}

TEST(WorkloadValidation, MaxPodSetsIsAnOption) {
  v1::Workload wl = GoodWorkload();
  *wl.mutable_spec()->add_pod_sets() = wl.spec().pod_sets(0);
  wl.mutable_spec()->mutable_pod_sets(1)->set_name("workers");
  EXPECT_THAT(ValidateWorkload(wl, 2), IsEmpty());
  EXPECT_THAT(ValidateWorkload(wl, 1),
              Contains(Violation("spec.podSets", "Too many: 2: must have at most 1 items")));
}

TEST(WorkloadValidation, MetadataAndPrioritiesKubernetesWouldRefuse) {
  v1::Workload wl = GoodWorkload();
  (*wl.mutable_metadata()->mutable_labels())["bad key!"] = "x";
  (*wl.mutable_metadata()->mutable_labels())["app"] = std::string(3 << 20, 'v');
  (*wl.mutable_metadata()->mutable_annotations())["example.com/ok"] = std::string(300 << 10, 'a');
  wl.mutable_spec()->set_priority(std::numeric_limits<int32_t>::min());
  const Violations v = ValidateWorkload(wl, 18);
  std::vector<std::string> fields;
  for (const FieldViolation& f : v) fields.push_back(f.field);
  EXPECT_THAT(fields, UnorderedElementsAre("metadata.labels", "metadata.labels[\"app\"]",
                                           "metadata.annotations", "spec.priority"))
      << Describe(v);
  // Kubernetes' highest priority and a qualified key with a prefix pass.
  v1::Workload fine = GoodWorkload();
  (*fine.mutable_metadata()->mutable_labels())["kueue.x-k8s.io/job-uid"] = "a_b.c-1";
  fine.mutable_spec()->set_priority(2000001000);
  EXPECT_THAT(ValidateWorkload(fine, 18), IsEmpty());
}

// ---- Queue-side objects -------------------------------------------------------------------

v1::ClusterQueue GoodClusterQueue() {
  v1::ClusterQueue cq;
  cq.mutable_metadata()->set_name("team-a");
  v1::ResourceGroup* g = cq.mutable_spec()->add_resource_groups();
  g->add_covered_resources("cpu");
  g->add_covered_resources("memory");
  for (const char* flavor : {"on-demand", "spot"}) {
    v1::FlavorQuotas* fq = g->add_flavors();
    fq->set_name(flavor);
    v1::ResourceQuota* cpu = fq->add_resources();
    cpu->set_name("cpu");
    cpu->set_nominal_quota("10");
    v1::ResourceQuota* mem = fq->add_resources();
    mem->set_name("memory");
    mem->set_nominal_quota("64Gi");
  }
  return cq;
}

struct ClusterQueueCase {
  std::string name;
  std::function<void(v1::ClusterQueue*)> mutate;
  std::string field;
  std::string description;
};

class ClusterQueueValidationTest : public ::testing::TestWithParam<ClusterQueueCase> {};

TEST_P(ClusterQueueValidationTest, ReportsTheFieldAndKueuesWords) {
  v1::ClusterQueue cq = GoodClusterQueue();
  GetParam().mutate(&cq);
  const Violations v = ValidateClusterQueue(cq);
  EXPECT_THAT(v, Contains(Violation(GetParam().field, GetParam().description))) << Describe(v);
}

v1::ResourceQuota* Quota(v1::ClusterQueue* cq, int group, int flavor, int resource) {
  return cq->mutable_spec()->mutable_resource_groups(group)->mutable_flavors(flavor)
      ->mutable_resources(resource);
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, ClusterQueueValidationTest,
    ::testing::Values(
        ClusterQueueCase{"NegativeNominal",
                         [](v1::ClusterQueue* c) { Quota(c, 0, 1, 1)->set_nominal_quota("-1Gi"); },
                         "spec.resourceGroups[0].flavors[1].resources[1].nominalQuota",
                         "Invalid value: \"-1Gi\": must be greater than or equal to 0"},
        ClusterQueueCase{"MissingNominal",
                         [](v1::ClusterQueue* c) { Quota(c, 0, 0, 0)->clear_nominal_quota(); },
                         "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
                         "Required value"},
        ClusterQueueCase{"FlavorListsFewerResources",
                         [](v1::ClusterQueue* c) {
                           c->mutable_spec()->mutable_resource_groups(0)->mutable_flavors(1)
                               ->mutable_resources()->RemoveLast();
                         },
                         "spec.resourceGroups[0].flavors[1].resources",
                         "flavors must have the same number of resources as the coveredResources"},
        ClusterQueueCase{"ResourceInTwoGroups",
                         [](v1::ClusterQueue* c) {
                           v1::ResourceGroup* g = c->mutable_spec()->add_resource_groups();
                           g->add_covered_resources("cpu");
                           v1::FlavorQuotas* fq = g->add_flavors();
                           fq->set_name("gpu-nodes");
                           fq->add_resources()->set_name("cpu");
                           fq->mutable_resources(0)->set_nominal_quota("1");
                         },
                         "spec.resourceGroups[1].coveredResources[0]", "Duplicate value: \"cpu\""},
        ClusterQueueCase{"FlavorInTwoGroups",
                         [](v1::ClusterQueue* c) {
                           v1::ResourceGroup* g = c->mutable_spec()->add_resource_groups();
                           g->add_covered_resources("example.com/gpu");
                           v1::FlavorQuotas* fq = g->add_flavors();
                           fq->set_name("spot");
                           fq->add_resources()->set_name("example.com/gpu");
                           fq->mutable_resources(0)->set_nominal_quota("1");
                         },
                         "spec.resourceGroups[1].flavors[0].name", "Duplicate value: \"spot\""},
        ClusterQueueCase{"TooManyResourceGroups",
                         [](v1::ClusterQueue* c) {
                           for (int i = 0; i < 16; ++i) {
                             v1::ResourceGroup* g = c->mutable_spec()->add_resource_groups();
                             g->add_covered_resources("r" + std::to_string(i));
                             v1::FlavorQuotas* fq = g->add_flavors();
                             fq->set_name("f" + std::to_string(i));
                             fq->add_resources()->set_name("r" + std::to_string(i));
                             fq->mutable_resources(0)->set_nominal_quota("1");
                           }
                         },
                         "spec.resourceGroups", "Too many: 17: must have at most 16 items"},
        ClusterQueueCase{"BorrowingLimitWithoutCohort",
                         [](v1::ClusterQueue* c) { Quota(c, 0, 0, 0)->set_borrowing_limit("1"); },
                         "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
                         "must be nil when cohort is empty"},
        ClusterQueueCase{"LendingLimitWithoutCohort",
                         [](v1::ClusterQueue* c) { Quota(c, 0, 0, 0)->set_lending_limit("1"); },
                         "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
                         "must be nil when cohort is empty"},
        ClusterQueueCase{"LendingLimitAboveNominal",
                         [](v1::ClusterQueue* c) {
                           c->mutable_spec()->set_cohort_name("org");
                           Quota(c, 0, 0, 0)->set_lending_limit("11");
                         },
                         "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
                         "Invalid value: \"11\": must be less than or equal to the nominalQuota"},
        ClusterQueueCase{"NegativeBorrowingLimit",
                         [](v1::ClusterQueue* c) {
                           c->mutable_spec()->set_cohort_name("org");
                           Quota(c, 0, 0, 0)->set_borrowing_limit("-2");
                         },
                         "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
                         "Invalid value: \"-2\": must be greater than or equal to 0"},
        ClusterQueueCase{"BadQueueingStrategy",
                         [](v1::ClusterQueue* c) {
                           c->mutable_spec()->set_queueing_strategy("FIFO");
                         },
                         "spec.queueingStrategy",
                         "Unsupported value: \"FIFO\": supported values: \"StrictFIFO\", "
                         "\"BestEffortFIFO\""},
        ClusterQueueCase{"BadStopPolicy",
                         [](v1::ClusterQueue* c) { c->mutable_spec()->set_stop_policy("Pause"); },
                         "spec.stopPolicy",
                         "Unsupported value: \"Pause\": supported values: \"None\", \"Hold\", "
                         "\"HoldAndDrain\""},
        ClusterQueueCase{"PreferenceNeedsTryNextFlavor",
                         [](v1::ClusterQueue* c) {
                           c->mutable_spec()->mutable_flavor_fungibility()->set_preference(
                               "PreemptionOverBorrowing");
                         },
                         "spec.flavorFungibility.preference",
                         "preference can only be set when whenCanBorrow and whenCanPreempt are "
                         "both TryNextFlavor"},
        ClusterQueueCase{"BorrowWithinCohortNeedsReclaim",
                         [](v1::ClusterQueue* c) {
                           c->mutable_spec()->mutable_preemption()->mutable_borrow_within_cohort()
                               ->set_policy("LowerPriority");
                         },
                         "spec.preemption",
                         "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"},
        ClusterQueueCase{"BadWithinClusterQueue",
                         [](v1::ClusterQueue* c) {
                           c->mutable_spec()->mutable_preemption()->set_within_cluster_queue(
                               "Always");
                         },
                         "spec.preemption.withinClusterQueue",
                         "Unsupported value: \"Always\": supported values: \"Never\", "
                         "\"LowerPriority\", \"LowerOrNewerEqualPriority\""},
        ClusterQueueCase{"BadCohortName",
                         [](v1::ClusterQueue* c) { c->mutable_spec()->set_cohort_name("Org"); },
                         "spec.cohortName",
                         "Invalid value: \"Org\": a lowercase RFC 1123 subdomain must consist of "
                         "lower case alphanumeric characters, '-' or '.', and must start and end "
                         "with an alphanumeric character (e.g. 'example.com', regex used for "
                         "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-"
                         "z0-9])?)*')"}),
    [](const ::testing::TestParamInfo<ClusterQueueCase>& info) { return info.param.name; });

TEST(ClusterQueueValidation, AGoodClusterQueuePasses) {
  EXPECT_THAT(ValidateClusterQueue(GoodClusterQueue()), IsEmpty());
  v1::ClusterQueue cq = GoodClusterQueue();
  cq.mutable_spec()->set_cohort_name("org");
  Quota(&cq, 0, 0, 0)->set_borrowing_limit("5");
  Quota(&cq, 0, 0, 0)->set_lending_limit("10");
  cq.mutable_spec()->mutable_flavor_fungibility()->set_when_can_borrow("TryNextFlavor");
  cq.mutable_spec()->mutable_flavor_fungibility()->set_when_can_preempt("TryNextFlavor");
  cq.mutable_spec()->mutable_flavor_fungibility()->set_preference("BorrowingOverPreemption");
  cq.mutable_spec()->mutable_preemption()->set_reclaim_within_cohort("Any");
  cq.mutable_spec()->mutable_preemption()->mutable_borrow_within_cohort()->set_policy(
      "LowerPriority");
  EXPECT_THAT(ValidateClusterQueue(cq), IsEmpty()) << Describe(ValidateClusterQueue(cq));
}

// Kueue's validateFairSharing: a weight that is negative, or above 0 but at most 1n, is refused
// on ClusterQueues and Cohorts alike; 0 and decimal weights are taken.
TEST(ClusterQueueValidation, FairSharingWeights) {
  v1::ClusterQueue cq = GoodClusterQueue();
  v1::Cohort cohort;
  cohort.mutable_metadata()->set_name("org");
  for (const char* ok : {"0", "1", "0.5", "250m", "2n"}) {
    cq.mutable_spec()->mutable_fair_sharing()->set_weight(ok);
    cohort.mutable_spec()->mutable_fair_sharing()->set_weight(ok);
    EXPECT_THAT(ValidateClusterQueue(cq), IsEmpty()) << ok;
    EXPECT_THAT(ValidateCohort(cohort), IsEmpty()) << ok;
  }
  cq.mutable_spec()->mutable_fair_sharing()->set_weight("-1");
  EXPECT_THAT(ValidateClusterQueue(cq),
              UnorderedElementsAre(Violation(
                  "spec.fairSharing", "Invalid value: \"-1\": must be greater than or equal to 0")));
  cohort.mutable_spec()->mutable_fair_sharing()->set_weight("1n");
  EXPECT_THAT(ValidateCohort(cohort),
              UnorderedElementsAre(Violation(
                  "spec.fairSharing", "Invalid value: \"1n\": When not 0, weight must be > 10e-9")));
  cq.mutable_spec()->mutable_fair_sharing()->set_weight("heavy");
  ASSERT_EQ(ValidateClusterQueue(cq).size(), 1u);
  EXPECT_EQ(ValidateClusterQueue(cq)[0].field, "spec.fairSharing.weight");
}

TEST(ClusterQueueValidation, AdmissionScopeAndLocalQueueWeights) {
  v1::ClusterQueue cq = GoodClusterQueue();
  for (const char* mode : {"UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"}) {
    cq.mutable_spec()->mutable_admission_scope()->set_admission_mode(mode);
    EXPECT_THAT(ValidateClusterQueue(cq), IsEmpty()) << mode;
  }
  cq.mutable_spec()->mutable_admission_scope()->set_admission_mode("ByUsage");
  EXPECT_THAT(ValidateClusterQueue(cq),
              UnorderedElementsAre(Violation(
                  "spec.admissionScope.admissionMode",
                  "Unsupported value: \"ByUsage\": supported values: "
                  "\"UsageBasedAdmissionFairSharing\", \"NoAdmissionFairSharing\"")));
  cq.mutable_spec()->mutable_admission_scope()->clear_admission_mode();
  EXPECT_THAT(ValidateClusterQueue(cq),
              UnorderedElementsAre(Violation("spec.admissionScope.admissionMode", "Required value")));
  v1::LocalQueue lq;
  lq.mutable_metadata()->set_namespace_("ns");
  lq.mutable_metadata()->set_name("lq");
  lq.mutable_spec()->set_cluster_queue("cq");
  lq.mutable_spec()->mutable_fair_sharing()->set_weight("0.5");
  EXPECT_THAT(ValidateLocalQueue(lq), IsEmpty());
  lq.mutable_spec()->mutable_fair_sharing()->set_weight("-2");
  EXPECT_THAT(ValidateLocalQueue(lq),
              UnorderedElementsAre(Violation(
                  "spec.fairSharing", "Invalid value: \"-2\": must be greater than or equal to 0")));
}

TEST(QueueObjectValidation, ResourceFlavorCohortLocalQueueAndPriorityClass) {
  v1::ResourceFlavor flavor;
  flavor.mutable_metadata()->set_name("spot");
  v1::Taint* taint = flavor.mutable_spec()->add_node_taints();
  taint->set_key("spot");
  taint->set_effect("Sometimes");
  EXPECT_THAT(ValidateResourceFlavor(flavor),
              Contains(Violation("spec.nodeTaints[0].effect",
                                 "Unsupported value: \"Sometimes\": supported values: "
                                 "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"")));

  v1::Cohort cohort;
  cohort.mutable_metadata()->set_name("org");
  cohort.mutable_spec()->set_parent_name("org");
  EXPECT_THAT(ValidateCohort(cohort),
              Contains(Violation("spec.parentName",
                                 "Invalid value: cohort cannot be its own parent")));
  cohort.mutable_spec()->clear_parent_name();
  v1::ResourceGroup* g = cohort.mutable_spec()->add_resource_groups();
  g->add_covered_resources("cpu");
  v1::FlavorQuotas* fq = g->add_flavors();
  fq->set_name("spot");
  fq->add_resources()->set_name("cpu");
  fq->mutable_resources(0)->set_nominal_quota("1");
  fq->mutable_resources(0)->set_lending_limit("1");
  EXPECT_THAT(ValidateCohort(cohort),
              Contains(Violation("spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
                                 "must be nil when parent is empty")));

  v1::LocalQueue lq;
  lq.mutable_metadata()->set_namespace_("team-a");
  lq.mutable_metadata()->set_name("lq");
  EXPECT_THAT(ValidateLocalQueue(lq), Contains(Violation("spec.clusterQueue", "Required value")));
  lq.mutable_spec()->set_cluster_queue("cq");
  EXPECT_THAT(ValidateLocalQueue(lq), IsEmpty());

  v1::WorkloadPriorityClass wpc;
  EXPECT_THAT(ValidateWorkloadPriorityClass(wpc),
              Contains(Violation("metadata.name", "Required value: name is required")));
}

TEST(NameValidation, SubdomainsAndLabels) {
  EXPECT_TRUE(IsDnsSubdomain("a.b-c.d"));
  EXPECT_TRUE(IsDnsSubdomain(std::string(253, 'a')));
  EXPECT_FALSE(IsDnsSubdomain(std::string(254, 'a')));
  EXPECT_FALSE(IsDnsSubdomain("a..b"));
  EXPECT_FALSE(IsDnsSubdomain("-a"));
  EXPECT_FALSE(IsDnsSubdomain("A"));
  EXPECT_TRUE(IsDnsLabel("main"));
  EXPECT_FALSE(IsDnsLabel("a.b"));
  EXPECT_FALSE(IsDnsLabel(std::string(64, 'a')));
}

}  // namespace
}  // namespace admitd::engine
