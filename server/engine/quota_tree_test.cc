#include "server/engine/quota_tree.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace admitd::engine {
namespace {

// A ClusterQueue spec over one flavor "f" and resource "cpu".
v1::ClusterQueueSpec Queue(const std::string& cohort, const std::string& nominal,
                           const std::string& borrowing = "", const std::string& lending = "") {
  v1::ClusterQueueSpec spec;
  spec.set_cohort_name(cohort);
  auto* g = spec.add_resource_groups();
  g->add_covered_resources("cpu");
  auto* fq = g->add_flavors();
  fq->set_name("f");
  auto* q = fq->add_resources();
  q->set_name("cpu");
  q->set_nominal_quota(nominal);
  if (!borrowing.empty()) q->set_borrowing_limit(borrowing);
  if (!lending.empty()) q->set_lending_limit(lending);
  return spec;
}

const FlavorResource kCpu{"f", "cpu"};

FlavorResourceQuantities Cpu(int64_t cores) { return {{kCpu, cores * 1000}}; }
FlavorResourceAmounts Amounts(const FlavorResourceQuantities& q) { return {q.begin(), q.end()}; }

// A Cohort object under `parent` (none when empty), with `nominal` CPUs of "f" of its own when
// given.
v1::CohortSpec Cohort(const std::string& nominal, const std::string& parent = "") {
  v1::CohortSpec spec;
  spec.set_parent_name(parent);
  if (!nominal.empty()) {
    auto* fq = spec.add_resource_groups()->add_flavors();
    fq->set_name("f");
    fq->add_resources()->set_name("cpu");
    fq->mutable_resources(0)->set_nominal_quota(nominal);
  }
  return spec;
}

TEST(QuotaTreeTest, LendingLimitWorkedExample) {
  // §3: cohort `lend` with lend-a (nominal 3, lendingLimit 2) and lend-b (nominal 2,
  // lendingLimit 2): localQuota(a) = 1, localQuota(b) = 0, subtreeQuota(lend) = 4.
  const v1::ClusterQueueSpec a = Queue("lend", "3", "", "2"), b = Queue("lend", "2", "", "2");
  QuotaTree tree;
  tree.Rebuild({{"lend-a", &a}, {"lend-b", &b}}, {}, {});
  tree.AddUsage("lend-b", Cpu(2), +1);
  // available(lend-b) = 0 + (4 - 2) = 2: a 3-CPU request is 1 short...
  EXPECT_EQ(tree.Available("lend-b", kCpu), 2000);
  // ...and potentialAvailable(lend-b) = 0 + 4 = 4 >= 3, so it does not exceed the maximum.
  EXPECT_EQ(tree.PotentialAvailable("lend-b", kCpu), 4000);
  // lend-a keeps its 1 private CPU and may use what the cohort has left.
  EXPECT_EQ(tree.Available("lend-a", kCpu), 3000);
  EXPECT_EQ(tree.PotentialAvailable("lend-a", kCpu), 5000);
}

TEST(QuotaTreeTest, BorrowingUpToTheLimit) {
  const v1::ClusterQueueSpec a = Queue("c", "2", "1"), b = Queue("c", "4");
  QuotaTree tree;
  tree.Rebuild({{"a", &a}, {"b", &b}}, {}, {});
  EXPECT_EQ(tree.Available("a", kCpu), 3000);  // its 2 plus 1 borrowed
  EXPECT_EQ(tree.PotentialAvailable("a", kCpu), 3000);
  EXPECT_EQ(tree.Available("b", kCpu), 6000);  // no limit: the whole cohort
  EXPECT_EQ(tree.BorrowingLevel("a", kCpu, 2000), 0);
  EXPECT_EQ(tree.BorrowingLevel("a", kCpu, 3000), 1);  // fits in the flat cohort (height 1)
  tree.AddUsage("b", Cpu(4), +1);
  EXPECT_EQ(tree.Available("a", kCpu), 2000);
  tree.AddUsage("a", Cpu(2), +1);
  EXPECT_EQ(tree.Available("b", kCpu), 0);
  tree.AddUsage("b", Cpu(4), -1);
  EXPECT_EQ(tree.Available("a", kCpu), 1000);  // the borrowing limit, not the free 4
  EXPECT_EQ(tree.Available("b", kCpu), 4000);
}

TEST(QuotaTreeTest, CohortObjectsAddQuotaAndNest) {
  // root (quota 10) <- team (no quota) <- q1 (nominal 1), q2 (nominal 1)
  v1::CohortSpec root;
  auto* g = root.add_resource_groups();
  g->add_covered_resources("cpu");
  auto* fq = g->add_flavors();
  fq->set_name("f");
  fq->add_resources()->set_name("cpu");
  fq->mutable_resources(0)->set_nominal_quota("10");
  v1::CohortSpec team;
  team.set_parent_name("root");
  const v1::ClusterQueueSpec q1 = Queue("team", "1"), q2 = Queue("team", "1");
  QuotaTree tree;
  tree.Rebuild({{"q1", &q1}, {"q2", &q2}}, {{"root", &root}, {"team", &team}}, {});
  EXPECT_EQ(tree.Root("q1"), "root");
  EXPECT_EQ(tree.PotentialAvailable("q1", kCpu), 12000);
  EXPECT_EQ(tree.BorrowingLevel("q1", kCpu, 2000), 1);   // fits in team (height 1)
  EXPECT_EQ(tree.BorrowingLevel("q1", kCpu, 5000), 2);   // only the root can hold it
  tree.AddUsage("q1", Cpu(5), +1);
  EXPECT_EQ(tree.Available("q2", kCpu), 7000);
  EXPECT_EQ(tree.ClusterQueuesUnder("root"), (std::vector<std::string>{"q1", "q2"}));
}

TEST(QuotaTreeTest, RebuildKeepsUsage) {
  const v1::ClusterQueueSpec a = Queue("c", "2"), b = Queue("c", "2");
  QuotaTree tree;
  tree.Rebuild({{"a", &a}, {"b", &b}}, {}, {{"a", Amounts(Cpu(3))}});
  EXPECT_EQ(tree.Available("b", kCpu), 1000);
  const v1::ClusterQueueSpec lone = Queue("", "2");
  tree.Rebuild({{"lone", &lone}}, {}, {{"lone", Amounts(Cpu(1))}});
  EXPECT_EQ(tree.Available("lone", kCpu), 1000);
  EXPECT_EQ(tree.BorrowingLevel("lone", kCpu, 5000), 0);  // no cohort: never borrows
}

TEST(QuotaTreeTest, SumsPastTheLargestQuantityStayExact) {
  const std::string max = "9223372036854775807m";  // the largest CPU quantity, in millicores
  const v1::ClusterQueueSpec a = Queue("c", max), b = Queue("c", max), d = Queue("c", max);
  QuotaTree tree;
  tree.Rebuild({{"a", &a}, {"b", &b}, {"d", &d}}, {}, {});
  const Amount one = kMaxQuantity;
  EXPECT_EQ(tree.Available("a", kCpu), 3 * one);
  EXPECT_EQ(tree.PotentialAvailable("a", kCpu), 3 * one);
  // Each queue uses all of its own quota and then some of the cohort's: 2.5 quotas in use.
  tree.AddUsage("a", {{kCpu, kMaxQuantity}}, +1);
  tree.AddUsage("b", {{kCpu, kMaxQuantity}}, +1);
  tree.AddUsage("d", {{kCpu, kMaxQuantity / 2}}, +1);
  EXPECT_EQ(tree.Available("a", kCpu), 3 * one - 2 * one - one / 2);
  EXPECT_EQ(tree.BorrowingLevel("a", kCpu, kMaxQuantity), 1);
  tree.AddUsage("a", {{kCpu, kMaxQuantity}}, -1);
  tree.AddUsage("b", {{kCpu, kMaxQuantity}}, -1);
  tree.AddUsage("d", {{kCpu, kMaxQuantity / 2}}, -1);
  EXPECT_EQ(tree.Usage("a", kCpu), 0);
  EXPECT_EQ(tree.Available("a", kCpu), 3 * one);
}

// SetClusterQueue, one queue at a time, ends where Rebuild from the same objects does: every
// query answers the same after each step of a random sequence of adds, moves, quota changes,
// removals and usage.
TEST(QuotaTreeTest, SetClusterQueueMatchesRebuild) {
  std::mt19937 rng(7);
  auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  // Cohort objects: "top" (quota 4) is the parent of "mid", which lends at most 2.
  const v1::CohortSpec top = Cohort("4"), mid = Cohort("", "top");
  const std::map<std::string, const v1::CohortSpec*> cohorts = {{"top", &top}, {"mid", &mid}};
  const std::vector<std::string> cohort_names = {"", "mid", "top", "loose-a", "loose-b"};
  std::map<std::string, v1::ClusterQueueSpec> specs;
  std::map<std::string, FlavorResourceAmounts> usage;
  QuotaTree incremental;
  incremental.Rebuild({}, cohorts, {});
  for (int step = 0; step < 400; ++step) {
    const std::string name = absl::StrCat("cq-", pick(12));
    if (pick(5) == 0 && specs.count(name) > 0 && usage[name].empty()) {
      specs.erase(name);
      usage.erase(name);
      incremental.SetClusterQueue(name, nullptr, {});
    } else if (pick(3) == 0 && specs.count(name) > 0) {
      const FlavorResourceQuantities add = Cpu(1 + pick(3));
      AddTo(&usage[name], add, +1);
      incremental.AddUsage(name, add, +1);
    } else {
      specs[name] = Queue(cohort_names[pick(5)], absl::StrCat(pick(6)),
                          pick(2) ? absl::StrCat(pick(4)) : "", pick(3) == 0 ? "1" : "");
      incremental.SetClusterQueue(name, &specs[name], usage[name]);
    }
    std::map<std::string, const v1::ClusterQueueSpec*> pointers;
    for (const auto& [n, spec] : specs) pointers[n] = &spec;
    QuotaTree rebuilt;
    rebuilt.Rebuild(pointers, cohorts, usage);
    for (const auto& entry : specs) {
      const std::string& cq = entry.first;
      SCOPED_TRACE(absl::StrCat("step ", step, ", ", cq));
      ASSERT_EQ(incremental.Available(cq, kCpu), rebuilt.Available(cq, kCpu));
      ASSERT_EQ(incremental.PotentialAvailable(cq, kCpu), rebuilt.PotentialAvailable(cq, kCpu));
      ASSERT_EQ(incremental.Usage(cq, kCpu), rebuilt.Usage(cq, kCpu));
      ASSERT_EQ(incremental.BorrowingLevel(cq, kCpu, 3000), rebuilt.BorrowingLevel(cq, kCpu, 3000));
      ASSERT_EQ(incremental.Path(cq), rebuilt.Path(cq));
      ASSERT_EQ(incremental.ClusterQueuesUnder(incremental.Root(cq)),
                rebuilt.ClusterQueuesUnder(rebuilt.Root(cq)));
      ASSERT_EQ(incremental.UnderNominal(cq, {kCpu}), rebuilt.UnderNominal(cq, {kCpu}));
    }
  }
}

// Taking many workloads out summed by queue (UsageSum) leaves every node where taking them out
// one at a time does, and adding the sum back restores the tree: in nested cohorts with lending
// limits, where what lands in a parent depends on the local quotas on the way.
TEST(QuotaTreeTest, SummedRemovalMatchesOneAtATime) {
  std::mt19937 rng(11);
  auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const v1::CohortSpec top = Cohort("3"), mid = Cohort("", "top");
  std::map<std::string, v1::ClusterQueueSpec> specs = {
      {"a", Queue("mid", "2", "", "1")}, {"b", Queue("mid", "1")},
      {"c", Queue("top", "4", "2", "3")}, {"d", Queue("top", "0")}};
  std::map<std::string, const v1::ClusterQueueSpec*> pointers;
  for (const auto& [n, spec] : specs) pointers[n] = &spec;
  for (int round = 0; round < 50; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    QuotaTree summed, single;
    summed.Rebuild(pointers, {{"top", &top}, {"mid", &mid}}, {});
    single.Rebuild(pointers, {{"top", &top}, {"mid", &mid}}, {});
    const int id = summed.InternPair(kCpu);
    ASSERT_EQ(single.InternPair(kCpu), id);
    // Workloads of 1-3 CPUs spread over the queues, some of them to be removed.
    QuotaTree::UsageSum removed;
    std::vector<std::pair<std::string, int64_t>> gone;
    for (int w = 0; w < 12; ++w) {
      const std::string cq = std::string(1, static_cast<char>('a' + pick(4)));
      const int64_t millis = (1 + pick(3)) * 1000;
      const std::vector<std::pair<int, int64_t>> usage = {{id, millis}};
      summed.AddUsage(summed.RefOf(cq), usage, +1);
      single.AddUsage(single.RefOf(cq), usage, +1);
      if (pick(2) == 0) {
        removed.Add(summed.RefOf(cq), usage);
        gone.emplace_back(cq, millis);
      }
    }
    auto same = [&] {
      for (const auto& entry : specs) {
        SCOPED_TRACE(entry.first);
        ASSERT_EQ(summed.Usage(entry.first, kCpu), single.Usage(entry.first, kCpu));
        ASSERT_EQ(summed.Available(entry.first, kCpu), single.Available(entry.first, kCpu));
        ASSERT_EQ(summed.BorrowingLevel(entry.first, kCpu, 2000),
                  single.BorrowingLevel(entry.first, kCpu, 2000));
      }
    };
    const Amount before = summed.Available("d", kCpu);
    summed.AddUsage(removed, -1);
    for (const auto& [cq, millis] : gone) {
      single.AddUsage(single.RefOf(cq), std::vector<std::pair<int, int64_t>>{{id, millis}}, -1);
    }
    same();
    summed.AddUsage(removed, +1);
    for (const auto& [cq, millis] : gone) {
      single.AddUsage(single.RefOf(cq), std::vector<std::pair<int, int64_t>>{{id, millis}}, +1);
    }
    same();
    EXPECT_EQ(summed.Available("d", kCpu), before);
  }
}

}  // namespace
}  // namespace admitd::engine
