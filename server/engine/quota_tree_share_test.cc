// Dominant resource shares (§19.3), case by case as Kueue's TestDominantResourceShare
// (pkg/cache/scheduler/fair_sharing_test.go) states them: a ClusterQueue "cq" with usage, an
// optional "lending-cq" beside it, optional Cohort objects, and optionally a workload's request
// added to every node; each node's rounded weighted share, dominant resource and borrowing.
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/engine/quota_tree.h"

namespace admitd::engine {
namespace {
namespace drs {  // its own names in the folder's unity build

struct Quota {
  std::string flavor, resource, nominal;
  std::string borrowing_limit = "", lending_limit = "";
};

void AddQuotas(google::protobuf::RepeatedPtrField<v1::ResourceGroup>* groups,
               const std::vector<Quota>& quotas) {
  v1::ResourceGroup* g = groups->Add();
  std::map<std::string, v1::FlavorQuotas*> flavors;
  for (const Quota& q : quotas) {
    bool covered = false;
    for (const std::string& r : g->covered_resources()) covered = covered || r == q.resource;
    if (!covered) g->add_covered_resources(q.resource);
    v1::FlavorQuotas*& f = flavors[q.flavor];
    if (f == nullptr) {
      f = g->add_flavors();
      f->set_name(q.flavor);
    }
    v1::ResourceQuota* r = f->add_resources();
    r->set_name(q.resource);
    r->set_nominal_quota(q.nominal);
    if (!q.borrowing_limit.empty()) r->set_borrowing_limit(q.borrowing_limit);
    if (!q.lending_limit.empty()) r->set_lending_limit(q.lending_limit);
  }
}

v1::ClusterQueueSpec Queue(const std::string& cohort, std::optional<std::string> weight,
                           const std::vector<Quota>& quotas) {
  v1::ClusterQueueSpec spec;
  spec.set_cohort_name(cohort);
  if (weight) spec.mutable_fair_sharing()->set_weight(*weight);
  AddQuotas(spec.mutable_resource_groups(), quotas);
  return spec;
}

v1::CohortSpec CohortOf(const std::string& parent, std::optional<std::string> weight,
                        const std::vector<Quota>& quotas) {
  v1::CohortSpec spec;
  spec.set_parent_name(parent);
  if (weight) spec.mutable_fair_sharing()->set_weight(*weight);
  if (!quotas.empty()) AddQuotas(spec.mutable_resource_groups(), quotas);
  return spec;
}

struct Result {
  int64_t share;
  std::string resource;
  bool borrowing;
  bool operator==(const Result& o) const {
    return share == o.share && resource == o.resource && borrowing == o.borrowing;
  }
};
std::ostream& operator<<(std::ostream& os, const Result& r) {
  return os << "{" << r.share << ", \"" << r.resource << "\", " << r.borrowing << "}";
}

const FlavorResource kCpu{"default", "cpu"};
const FlavorResource kGpu{"default", "example.com/gpu"};
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

class DominantResourceShareTest : public ::testing::Test {
 protected:
  // Builds the tree, puts `usage` in "cq", and reads every node's share with `request` added.
  void Run(const FlavorResourceQuantities& usage,
           const FlavorResourceQuantities* request = nullptr) {
    std::map<std::string, const v1::ClusterQueueSpec*> queues;
    for (const auto& [name, spec] : queues_) queues[name] = &spec;
    std::map<std::string, const v1::CohortSpec*> cohorts;
    for (const auto& [name, spec] : cohorts_) cohorts[name] = &spec;
    tree_.Rebuild(queues, cohorts, {});
    tree_.AddUsage("cq", usage, +1);
    got_.clear();
    for (const auto& [name, spec] : queues_) {
      const QuotaTree::Share s = tree_.ShareOf(name, /*cohort=*/false, request);
      got_[name] = {s.Weighted(), s.resource, s.borrowing};
      if (!spec.cohort_name().empty()) {
        const QuotaTree::Share c = tree_.ShareOf(spec.cohort_name(), /*cohort=*/true, request);
        got_[spec.cohort_name()] = {c.Weighted(), c.resource, c.borrowing};
      }
    }
    for (const auto& [name, spec] : cohorts_) {
      const QuotaTree::Share c = tree_.ShareOf(name, /*cohort=*/true, request);
      got_[name] = {c.Weighted(), c.resource, c.borrowing};
    }
  }

  std::map<std::string, v1::ClusterQueueSpec> queues_;
  std::map<std::string, v1::CohortSpec> cohorts_;
  QuotaTree tree_;
  std::map<std::string, Result> got_;
};

const Result kNone{0, "", false};

TEST_F(DominantResourceShareTest, NoCohort) {
  queues_["cq"] = Queue("", std::nullopt, {{"default", "cpu", "2000"},
                                           {"default", "example.com/gpu", "5"}});
  Run({{kCpu, 1000}, {kGpu, 2}});
  EXPECT_EQ(got_, (std::map<std::string, Result>{{"cq", kNone}}));
}

TEST_F(DominantResourceShareTest, UsageBelowNominal) {
  queues_["cq"] = Queue("test-cohort", "1", {{"default", "cpu", "2"},
                                             {"default", "example.com/gpu", "5"}});
  queues_["lending-cq"] = Queue("test-cohort", "1", {{"default", "cpu", "8"},
                                                     {"default", "example.com/gpu", "5"}});
  Run({{kCpu, 1000}, {kGpu, 2}});
  EXPECT_EQ(got_, (std::map<std::string, Result>{
                      {"cq", kNone}, {"lending-cq", kNone}, {"test-cohort", kNone}}));
}

TEST_F(DominantResourceShareTest, UsageAboveNominal) {
  queues_["cq"] = Queue("test-cohort", "1", {{"default", "cpu", "2"},
                                             {"default", "example.com/gpu", "5"}});
  queues_["lending-cq"] = Queue("test-cohort", "1", {{"default", "cpu", "8"},
                                                     {"default", "example.com/gpu", "5"}});
  Run({{kCpu, 3000}, {kGpu, 7}});
  EXPECT_EQ(got_, (std::map<std::string, Result>{
                      {"cq", {200, "example.com/gpu", true}},  // (7-5)*1000/10
                      {"lending-cq", kNone},
                      {"test-cohort", kNone}}));
}

TEST_F(DominantResourceShareTest, UsageSlightlyAboveNominalInACohortWithLargeQuotas) {
  queues_["cq"] = Queue("test-cohort", "1", {{"default", "example.com/gpu", "500"}});
  queues_["lending-cq"] = Queue("test-cohort", "300", {{"default", "example.com/gpu", "1000"}});
  Run({{kGpu, 501}});
  EXPECT_EQ(got_["cq"], (Result{1, "example.com/gpu", true}));  // 1*1000/1500, rounded up
  EXPECT_EQ(got_["lending-cq"], kNone);
}

TEST_F(DominantResourceShareTest, UsageWayAboveNominalInACohortWithLargeQuotasAndWeights) {
  queues_["cq"] = Queue("test-cohort", "300", {{"default", "example.com/gpu", "500"}});
  queues_["lending-cq"] = Queue("test-cohort", "300", {{"default", "example.com/gpu", "1000"}});
  Run({{kGpu, 800}});
  EXPECT_EQ(got_["cq"], (Result{1, "example.com/gpu", true}));  // 300*1000/1500/300
}

TEST_F(DominantResourceShareTest, OneResourceAboveNominal) {
  queues_["cq"] = Queue("test-cohort", "1", {{"default", "cpu", "2"},
                                             {"default", "example.com/gpu", "5"}});
  queues_["lending-cq"] = Queue("test-cohort", "1", {{"default", "cpu", "8"},
                                                     {"default", "example.com/gpu", "5"}});
  Run({{kCpu, 3000}, {kGpu, 3}});
  EXPECT_EQ(got_["cq"], (Result{100, "cpu", true}));  // (3-2)*1000/10
  EXPECT_EQ(got_["test-cohort"], kNone);
}

TEST_F(DominantResourceShareTest, UsageWithWorkloadAboveNominal) {
  queues_["cq"] = Queue("test-cohort", "1", {{"default", "cpu", "2"},
                                             {"default", "example.com/gpu", "5"}});
  queues_["lending-cq"] = Queue("test-cohort", "1", {{"default", "cpu", "8"},
                                                     {"default", "example.com/gpu", "5"}});
  const FlavorResourceQuantities request = {{kCpu, 4000}, {kGpu, 4}};
  Run({{kCpu, 1000}, {kGpu, 2}}, &request);
  EXPECT_EQ(got_, (std::map<std::string, Result>{
                      {"cq", {300, "cpu", true}},  // (1+4-2)*1000/10
                      {"lending-cq", kNone},
                      {"test-cohort", kNone}}));
}

TEST_F(DominantResourceShareTest, AResourceWithZeroLendable) {
  queues_["cq"] = Queue("test-cohort", "1",
                        {{"default", "cpu", "2"}, {"default", "example.com/gpu", "2", "", "0"}});
  queues_["lending-cq"] = Queue("test-cohort", "1", {{"default", "cpu", "8"},
                                                     {"default", "example.com/gpu", "64", "", "0"}});
  const FlavorResourceQuantities request = {{kCpu, 4000}, {kGpu, 4}};
  Run({{kCpu, 1000}, {kGpu, 1}}, &request);
  // The GPUs borrowed have nothing to borrow from: the CPUs dominate.
  EXPECT_EQ(got_["cq"], (Result{300, "cpu", true}));  // (1+4-2)*1000/10
  EXPECT_EQ(got_["lending-cq"], kNone);
}

TEST_F(DominantResourceShareTest, MultipleFlavors) {
  queues_["cq"] = Queue("test-cohort", "1", {{"on-demand", "cpu", "20"}, {"spot", "cpu", "80"}});
  queues_["lending-cq"] = Queue("test-cohort", "1", {{"default", "cpu", "100"}});
  const FlavorResourceQuantities request = {{{"on-demand", "cpu"}, 10000}};
  Run({{{"on-demand", "cpu"}, 15000}, {{"spot", "cpu"}, 5000}}, &request);
  EXPECT_EQ(got_["cq"], (Result{25, "cpu", true}));  // ((15+10-20)+0)*1000/200
  EXPECT_EQ(got_["lending-cq"], kNone);
}

TEST_F(DominantResourceShareTest, AboveNominalWithIntegerWeight) {
  queues_["cq"] = Queue("test-cohort", "2", {{"default", "example.com/gpu", "5"}});
  queues_["lending-cq"] = Queue("test-cohort", "1", {{"default", "example.com/gpu", "5"}});
  Run({{kGpu, 7}});
  EXPECT_EQ(got_["cq"], (Result{100, "example.com/gpu", true}));  // ((7-5)*1000/10)/2
}

TEST_F(DominantResourceShareTest, AboveNominalWithDecimalWeight) {
  queues_["cq"] = Queue("test-cohort", "0.5", {{"default", "example.com/gpu", "5"}});
  queues_["lending-cq"] = Queue("test-cohort", "1", {{"default", "example.com/gpu", "5"}});
  Run({{kGpu, 7}});
  EXPECT_EQ(got_["cq"], (Result{400, "example.com/gpu", true}));  // ((7-5)*1000/10)/(1/2)
}

TEST_F(DominantResourceShareTest, AboveNominalWithZeroWeight) {
  queues_["cq"] = Queue("test-cohort", "0", {{"default", "example.com/gpu", "5"}});
  queues_["lending-cq"] = Queue("test-cohort", "1", {{"default", "example.com/gpu", "10"}});
  Run({{kGpu, 7}});
  EXPECT_EQ(got_["cq"], (Result{kMax, "example.com/gpu", true}));
  EXPECT_EQ(got_["lending-cq"], kNone);
  EXPECT_EQ(got_["test-cohort"], kNone);
}

TEST_F(DominantResourceShareTest, CohortHasResourceShare) {
  queues_["cq"] = Queue("child-cohort", "1", {{"default", "example.com/gpu", "5"}});
  cohorts_["child-cohort"] = CohortOf("root", "2", {});
  cohorts_["root"] = CohortOf("", std::nullopt, {{"default", "example.com/gpu", "45"}});
  Run({{kGpu, 10}});
  EXPECT_EQ(got_, (std::map<std::string, Result>{
                      {"cq", {100, "example.com/gpu", true}},           // (5 / 50) * 1000
                      {"child-cohort", {50, "example.com/gpu", true}},  // (5 / 50) * 1000 / 2
                      {"root", kNone}}));
}

TEST_F(DominantResourceShareTest, ResourceShareDefinedForResourcesOnlyAvailableAtTheRootCohort) {
  queues_["cq"] = Queue("child-cohort", "1", {{"default", "example.com/gpu", "0"}});
  cohorts_["child-cohort"] = CohortOf("root", "2", {});
  cohorts_["root"] = CohortOf("", std::nullopt, {{"default", "example.com/gpu", "50"}});
  Run({{kGpu, 10}});
  EXPECT_EQ(got_, (std::map<std::string, Result>{
                      {"cq", {200, "example.com/gpu", true}},            // (10 / 50) * 1000
                      {"child-cohort", {100, "example.com/gpu", true}},  // (10 / 50) * 1000 / 2
                      {"root", kNone}}));
}

TEST_F(DominantResourceShareTest, ResourceShareAffectedByBorrowingLimit) {
  // The cohort's resources are 10 seen from cq, 50 seen from child-cohort.
  queues_["cq"] = Queue("child-cohort", std::nullopt, {{"default", "example.com/gpu", "0"}});
  cohorts_["child-cohort"] = CohortOf("root", std::nullopt,
                                      {{"default", "example.com/gpu", "0", "10"}});
  cohorts_["root"] = CohortOf("", std::nullopt, {{"default", "example.com/gpu", "50"}});
  Run({{kGpu, 10}});
  EXPECT_EQ(got_, (std::map<std::string, Result>{
                      {"cq", {1000, "example.com/gpu", true}},           // (10 / 10) * 1000
                      {"child-cohort", {200, "example.com/gpu", true}},  // (10 / 50) * 1000
                      {"root", kNone}}));
}

TEST(CompareSharesTest, AZeroWeightBorrowerComesAfterEveryOtherAndLowerSharesFirst) {
  const QuotaTree::Share low{.ratio = 100, .resource = "cpu", .borrowing = true, .weight = 1};
  const QuotaTree::Share high{.ratio = 300, .resource = "cpu", .borrowing = true, .weight = 1};
  const QuotaTree::Share zero{.ratio = 10, .resource = "cpu", .borrowing = true, .weight = 0};
  const QuotaTree::Share zero_more{.ratio = 20, .resource = "cpu", .borrowing = true, .weight = 0};
  const QuotaTree::Share idle{.weight = 0};  // weight 0, not borrowing: share 0
  EXPECT_LT(QuotaTree::CompareShares(low, high), 0);
  EXPECT_GT(QuotaTree::CompareShares(high, low), 0);
  EXPECT_GT(QuotaTree::CompareShares(zero, high), 0);
  EXPECT_LT(QuotaTree::CompareShares(high, zero), 0);
  EXPECT_LT(QuotaTree::CompareShares(zero, zero_more), 0);  // both weight 0: by ratio
  EXPECT_LT(QuotaTree::CompareShares(idle, low), 0);
  EXPECT_EQ(QuotaTree::CompareShares(low, low), 0);
  // §19.3's worked example: 250 weighted by 0.3 is 833.33..., shown as 834.
  EXPECT_EQ((QuotaTree::Share{.ratio = 250, .weight = 0.3}.Weighted()), 834);
}

}  // namespace drs
}  // namespace
}  // namespace admitd::engine
