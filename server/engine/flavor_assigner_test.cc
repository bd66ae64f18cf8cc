#include "server/engine/flavor_assigner.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine/conditions.h"

namespace admitd::engine {
namespace {

// A ClusterQueue with one resource group over `resources`, flavors in the given order, each with
// the same nominal quota per resource.
struct FlavorQuota {
  std::string flavor;
  std::vector<std::string> nominal;  // one per covered resource
};

class FlavorAssignerTest : public ::testing::Test {
 protected:
  void Group(const std::vector<std::string>& resources, const std::vector<FlavorQuota>& flavors) {
    v1::ResourceGroup* g =
        cq_.object.mutable_cluster_queue()->mutable_spec()->add_resource_groups();
    for (const std::string& r : resources) g->add_covered_resources(r);
    for (const FlavorQuota& f : flavors) {
      v1::FlavorQuotas* fq = g->add_flavors();
      fq->set_name(f.flavor);
      for (size_t i = 0; i < resources.size(); ++i) {
        v1::ResourceQuota* q = fq->add_resources();
        q->set_name(resources[i]);
        q->set_nominal_quota(f.nominal[i]);
      }
      if (flavor_objects_.count(f.flavor) == 0) flavor_objects_[f.flavor].mutable_metadata()->set_name(f.flavor);
    }
  }
  void Build() {
    cq_.object.mutable_cluster_queue()->mutable_metadata()->set_name("cq");
    cq_.Rebuild();
    tree_.Rebuild({{"cq", &cq_.object.cluster_queue().spec()}}, {}, {{"cq", usage_}});
    flavors_.clear();
    for (const auto& [name, f] : flavor_objects_) flavors_[name] = &f;
  }
  // One pod set requesting `per_pod` for each of `count` pods.
  PodSetRequest PodSet(const std::string& name, int count, const ResourceList& per_pod) {
    pods_.push_back(std::make_unique<v1::PodSpec>());
    PodSetRequest ps;
    ps.name = name;
    ps.count = count;
    ps.per_pod = per_pod;
    ps.pod = pods_.back().get();
    return ps;
  }
  v1::PodSpec& PodOf(const PodSetRequest& ps) { return *const_cast<v1::PodSpec*>(ps.pod); }
  Assignment Assign(const std::vector<PodSetRequest>& pod_sets,
                    const PreemptionOracle* oracle = nullptr,
                    const ScanProgress* resume = nullptr) {
    Build();
    return AssignFlavors(cq_, tree_, flavors_, pod_sets, oracle, resume);
  }
  v1::FlavorFungibility* Fungibility() {
    return cq_.object.mutable_cluster_queue()->mutable_spec()->mutable_flavor_fungibility();
  }

  ClusterQueueState cq_;
  QuotaTree tree_;
  FlavorResourceAmounts usage_;
  std::map<std::string, v1::ResourceFlavor> flavor_objects_;
  std::map<std::string, const v1::ResourceFlavor*> flavors_;
  std::vector<std::unique_ptr<v1::PodSpec>> pods_;
};

TEST_F(FlavorAssignerTest, FirstFlavorThatFitsInOrder) {
  Group({"cpu"}, {{"on-demand", {"2"}}, {"spot", {"10"}}});
  usage_[{"on-demand", "cpu"}] = 1500;
  Assignment a = Assign({PodSet("main", 1, {{"cpu", 1000}})});
  ASSERT_TRUE(a.fits) << a.message;
  EXPECT_EQ(a.flavors[0].at("cpu"), "spot");
  EXPECT_EQ(a.usage, (FlavorResourceQuantities{{{"spot", "cpu"}, 1000}}));
  EXPECT_EQ(a.totals[0].at("cpu"), 1000);
  EXPECT_EQ(a.counts[0], 1);

  usage_.clear();
  a = Assign({PodSet("main", 1, {{"cpu", 1000}})});
  EXPECT_EQ(a.flavors[0].at("cpu"), "on-demand");
}

TEST_F(FlavorAssignerTest, WaitingForQuotaMessage) {
  Group({"cpu"}, {{"default", {"4"}}});
  usage_[{"default", "cpu"}] = 3000;
  Assignment a = Assign({PodSet("one", 2, {{"cpu", 1000}})});
  EXPECT_FALSE(a.fits);
  EXPECT_EQ(a.reason, kReasonWaitingForQuota);
  EXPECT_EQ(a.message,
            "couldn't assign flavors to pod set one: insufficient unused quota for cpu in flavor "
            "default, 1 more needed");
  EXPECT_TRUE(a.usage.empty());
}

TEST_F(FlavorAssignerTest, ExceedsMaxQuotaMessage) {
  Group({"cpu"}, {{"default", {"50m"}}});
  Assignment a = Assign({PodSet("one", 1, {{"cpu", 100}})});
  EXPECT_EQ(a.reason, kReasonExceedsMaxQuota);
  EXPECT_EQ(a.message,
            "couldn't assign flavors to pod set one: insufficient quota for cpu in flavor "
            "default, previously considered podsets requests (0) + current podset request (100m) "
            "> maximum capacity (50m)");
}

TEST_F(FlavorAssignerTest, EarlierPodSetsCountAsPreviouslyConsidered) {
  Group({"cpu"}, {{"default", {"1"}}});
  Assignment a = Assign({PodSet("driver", 1, {{"cpu", 1000}}), PodSet("main", 1, {{"cpu", 2000}})});
  EXPECT_FALSE(a.fits);
  EXPECT_EQ(a.reason, kReasonExceedsMaxQuota);
  EXPECT_EQ(a.message,
            "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor "
            "default, previously considered podsets requests (1) + current podset request (2) > "
            "maximum capacity (1)");
}

TEST_F(FlavorAssignerTest, UntoleratedTaintIsSkippedAndReasonsAreSorted) {
  Group({"cpu"}, {{"spot-tainted", {"10"}}, {"on-demand", {"5"}}});
  v1::Taint* taint = flavor_objects_["spot-tainted"].mutable_spec()->add_node_taints();
  taint->set_key("key");
  taint->set_value("val");
  taint->set_effect("NoSchedule");
  usage_[{"on-demand", "cpu"}] = 0;
  Assignment a = Assign({PodSet("main", 10, {{"cpu", 1000}})});
  EXPECT_FALSE(a.fits);
  // The most severe over groups of the least severe within a group: ExceedsMaxQuota (on-demand)
  // beats NoMatchingFlavor (spot-tainted) inside the one group.
  EXPECT_EQ(a.reason, kReasonExceedsMaxQuota);
  EXPECT_EQ(a.message,
            "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor "
            "on-demand, previously considered podsets requests (0) + current podset request (10) "
            "> maximum capacity (5), untolerated taint {key val NoSchedule <nil>} in flavor "
            "spot-tainted");

  // The same pod set, tolerating the taint, lands on the tainted flavor.
  PodSetRequest ps = PodSet("main", 10, {{"cpu", 1000}});
  v1::Toleration* t = PodOf(ps).add_tolerations();
  t->set_key("key");
  t->set_operator_("Exists");
  a = Assign({ps});
  ASSERT_TRUE(a.fits) << a.message;
  EXPECT_EQ(a.flavors[0].at("cpu"), "spot-tainted");
}

TEST_F(FlavorAssignerTest, TheFlavorsOwnTolerationsCount) {
  Group({"cpu"}, {{"spot", {"10"}}});
  v1::Taint* taint = flavor_objects_["spot"].mutable_spec()->add_node_taints();
  taint->set_key("spot");
  taint->set_effect("NoExecute");
  v1::Toleration* t = flavor_objects_["spot"].mutable_spec()->add_tolerations();
  t->set_key("spot");
  t->set_operator_("Exists");
  EXPECT_TRUE(Assign({PodSet("main", 1, {{"cpu", 1000}})}).fits);
}

TEST_F(FlavorAssignerTest, PreferNoScheduleTaintsDoNotMatter) {
  Group({"cpu"}, {{"spot", {"10"}}});
  v1::Taint* taint = flavor_objects_["spot"].mutable_spec()->add_node_taints();
  taint->set_key("spot");
  taint->set_effect("PreferNoSchedule");
  EXPECT_TRUE(Assign({PodSet("main", 1, {{"cpu", 1000}})}).fits);
}

TEST_F(FlavorAssignerTest, NodeSelectorAndAffinityOnTheFlavorsLabelKeysOnly) {
  Group({"cpu"}, {{"x86", {"10"}}, {"arm", {"10"}}});
  (*flavor_objects_["x86"].mutable_spec()->mutable_node_labels())["arch"] = "amd64";
  (*flavor_objects_["arm"].mutable_spec()->mutable_node_labels())["arch"] = "arm64";

  PodSetRequest selector = PodSet("main", 1, {{"cpu", 1000}});
  (*PodOf(selector).mutable_node_selector())["arch"] = "arm64";
  (*PodOf(selector).mutable_node_selector())["zone"] = "a";  // no flavor labels zone: ignored
  Assignment a = Assign({selector});
  ASSERT_TRUE(a.fits) << a.message;
  EXPECT_EQ(a.flavors[0].at("cpu"), "arm");

  PodSetRequest affinity = PodSet("main", 1, {{"cpu", 1000}});
  v1::NodeSelectorRequirement* req =
      PodOf(affinity).add_required_node_affinity()->add_match_expressions();
  req->set_key("arch");
  req->set_operator_("NotIn");
  req->add_values("amd64");
  a = Assign({affinity});
  EXPECT_EQ(a.flavors[0].at("cpu"), "arm");

  req->set_operator_("In");
  req->clear_values();
  req->add_values("ppc64le");
  a = Assign({affinity});
  EXPECT_FALSE(a.fits);
  EXPECT_EQ(a.reason, kReasonNoMatchingFlavor);
  EXPECT_EQ(a.message,
            "couldn't assign flavors to pod set main: flavor arm doesn't match node affinity, "
            "flavor x86 doesn't match node affinity");
}

TEST_F(FlavorAssignerTest, MissingFlavorIsNotFound) {
  Group({"cpu"}, {{"gone", {"10"}}});
  flavor_objects_.erase("gone");
  Assignment a = Assign({PodSet("main", 1, {{"cpu", 1000}})});
  EXPECT_EQ(a.reason, kReasonNoMatchingFlavor);
  EXPECT_EQ(a.message, "couldn't assign flavors to pod set main: flavor gone not found");
}

TEST_F(FlavorAssignerTest, ResourceNotCovered) {
  Group({"cpu"}, {{"default", {"10"}}});
  Assignment a = Assign({PodSet("main", 1, {{"cpu", 1000}, {"example.com/gpu", 1}})});
  EXPECT_EQ(a.reason, kReasonNoMatchingFlavor);
  EXPECT_EQ(a.message,
            "couldn't assign flavors to pod set main: resource example.com/gpu unavailable in "
            "ClusterQueue");
  // A zero request of an undeclared resource is ignored.
  a = Assign({PodSet("main", 1, {{"cpu", 1000}, {"example.com/gpu", 0}})});
  EXPECT_TRUE(a.fits) << a.message;
}

TEST_F(FlavorAssignerTest, OneFlavorPerResourceGroupAndGroupsIndependent) {
  Group({"cpu", "memory"}, {{"small", {"2", "2Gi"}}, {"large", {"8", "32Gi"}}});
  Group({"example.com/gpu"}, {{"a100", {"4"}}});
  // cpu fits in small but memory does not: both go to large together.
  Assignment a =
      Assign({PodSet("main", 2, {{"cpu", 1000}, {"memory", 4LL << 30}, {"example.com/gpu", 1}})});
  ASSERT_TRUE(a.fits) << a.message;
  EXPECT_EQ(a.flavors[0],
            (std::map<std::string, std::string>{
                {"cpu", "large"}, {"memory", "large"}, {"example.com/gpu", "a100"}}));
  EXPECT_EQ(a.usage, (FlavorResourceQuantities{{{"large", "cpu"}, 2000},
                                               {{"large", "memory"}, 8LL << 30},
                                               {{"a100", "example.com/gpu"}, 2}}));
}

TEST_F(FlavorAssignerTest, ImplicitPodsResource) {
  Group({"cpu", "pods"}, {{"default", {"10", "3"}}});
  Assignment a = Assign({PodSet("main", 3, {{"cpu", 1000}})});
  ASSERT_TRUE(a.fits) << a.message;
  EXPECT_EQ(a.totals[0].at("pods"), 3);
  EXPECT_EQ(a.flavors[0].at("pods"), "default");
  a = Assign({PodSet("main", 4, {{"cpu", 1000}})});
  EXPECT_EQ(a.message,
            "couldn't assign flavors to pod set main: insufficient quota for pods in flavor "
            "default, previously considered podsets requests (0) + current podset request (4) > "
            "maximum capacity (3)");
}

TEST_F(FlavorAssignerTest, FirstPodSetWithoutAFlavorEndsTheAssignment) {
  Group({"cpu"}, {{"default", {"1"}}});
  usage_[{"default", "cpu"}] = 1000;
  Assignment a = Assign({PodSet("driver", 1, {{"cpu", 500}}), PodSet("workers", 1, {{"cpu", 500}})});
  EXPECT_FALSE(a.fits);
  EXPECT_EQ(a.message,
            "couldn't assign flavors to pod set driver: insufficient unused quota for cpu in "
            "flavor default, 500m more needed");
}

// An oracle that answers the same for every pair, counting its calls.
struct FixedOracle {
  OracleAnswer answer;
  int calls = 0;
  PreemptionOracle Fn() {
    return [this](const FlavorResource&, int64_t) {
      ++calls;
      return answer;
    };
  }
};

TEST_F(FlavorAssignerTest, PreemptingPodSetsAreJoinedBySemicolon) {
  Group({"cpu"}, {{"default", {"1"}}});
  usage_[{"default", "cpu"}] = 1000;
  FixedOracle o{{OracleAnswer::Possibility::kPreempt, 0}};
  const PreemptionOracle fn = o.Fn();
  Assignment a = Assign({PodSet("driver", 1, {{"cpu", 500}}), PodSet("workers", 1, {{"cpu", 500}})},
                        &fn);
  EXPECT_TRUE(a.preempt);
  EXPECT_EQ(a.reason, kReasonWaitingForQuota);
  EXPECT_EQ(a.message,
            "couldn't assign flavors to pod set driver: insufficient unused quota for cpu in "
            "flavor default, 500m more needed; couldn't assign flavors to pod set workers: "
            "insufficient unused quota for cpu in flavor default, 1 more needed");
  EXPECT_EQ(a.usage.at({"default", "cpu"}), 1000);
  EXPECT_THAT(a.needs_preemption, ::testing::ElementsAre(FlavorResource{"default", "cpu"}));
}

TEST_F(FlavorAssignerTest, NoCandidatesRanksBelowPreemptionButAboveNoFit) {
  // on-demand: preemption finds nobody; spot: preemption finds targets. The default
  // whenCanPreempt (TryNextFlavor) scans both and keeps the flavor with candidates.
  Group({"cpu"}, {{"on-demand", {"2"}}, {"spot", {"2"}}});
  usage_[{"on-demand", "cpu"}] = 2000;
  usage_[{"spot", "cpu"}] = 2000;
  int call = 0;
  const PreemptionOracle fn = [&](const FlavorResource& fr, int64_t) {
    ++call;
    return OracleAnswer{fr.first == "spot" ? OracleAnswer::Possibility::kPreempt
                                           : OracleAnswer::Possibility::kNoCandidates,
                        0};
  };
  Assignment a = Assign({PodSet("main", 1, {{"cpu", 1000}})}, &fn);
  EXPECT_EQ(call, 2);
  EXPECT_TRUE(a.preempt);
  EXPECT_EQ(a.flavors[0].at("cpu"), "spot");
  EXPECT_EQ(a.progress[0].at("cpu"), -1);  // the scan reached the last flavor
}

TEST_F(FlavorAssignerTest, WhenCanPreemptMayStopSearchTakesTheFirstPreemptingFlavor) {
  Group({"cpu"}, {{"on-demand", {"2"}}, {"spot", {"2"}}});
  usage_[{"on-demand", "cpu"}] = 2000;
  Fungibility()->set_when_can_preempt("MayStopSearch");
  FixedOracle o{{OracleAnswer::Possibility::kPreempt, 0}};
  const PreemptionOracle fn = o.Fn();
  Assignment a = Assign({PodSet("main", 1, {{"cpu", 1000}})}, &fn);
  EXPECT_TRUE(a.preempt);
  EXPECT_EQ(a.flavors[0].at("cpu"), "on-demand");
  EXPECT_EQ(a.progress[0].at("cpu"), 0);  // stopped at the first flavor
  EXPECT_TRUE(a.PendingFlavors());
}

TEST_F(FlavorAssignerTest, DefaultFungibilityPrefersAFitOverPreemption) {
  Group({"cpu"}, {{"on-demand", {"2"}}, {"spot", {"2"}}});
  usage_[{"on-demand", "cpu"}] = 2000;
  FixedOracle o{{OracleAnswer::Possibility::kPreempt, 0}};
  const PreemptionOracle fn = o.Fn();
  Assignment a = Assign({PodSet("main", 1, {{"cpu", 1000}})}, &fn);
  EXPECT_TRUE(a.fits);
  EXPECT_EQ(a.flavors[0].at("cpu"), "spot");
  EXPECT_EQ(a.message, "");  // a Fit keeps no reasons from the flavors it skipped
}

TEST_F(FlavorAssignerTest, ScanResumesAfterTheRecordedFlavor) {
  Group({"cpu"}, {{"a", {"2"}}, {"b", {"2"}}, {"c", {"2"}}});
  ScanProgress resume = {{{"cpu", 0}}};
  Assignment a = Assign({PodSet("main", 1, {{"cpu", 1000}})}, nullptr, &resume);
  EXPECT_TRUE(a.fits);
  EXPECT_EQ(a.flavors[0].at("cpu"), "b");
  EXPECT_EQ(a.progress[0].at("cpu"), 1);
  resume = {{{"cpu", -1}}};  // the last scan reached the end: start over
  EXPECT_EQ(Assign({PodSet("main", 1, {{"cpu", 1000}})}, nullptr, &resume).flavors[0].at("cpu"),
            "a");
}

TEST_F(FlavorAssignerTest, ResourceOutsideTheQueueReplacesThePodSetStatus) {
  Group({"cpu"}, {{"default", {"1"}}});
  usage_[{"default", "cpu"}] = 1000;
  FixedOracle o{{OracleAnswer::Possibility::kNoCandidates, 0}};
  const PreemptionOracle fn = o.Fn();
  Assignment a = Assign({PodSet("main", 1, {{"cpu", 500}, {"example.com/gpu", 1}})}, &fn);
  EXPECT_FALSE(a.fits);
  EXPECT_FALSE(a.preempt);
  EXPECT_EQ(a.reason, kReasonNoMatchingFlavor);
  EXPECT_EQ(a.message,
            "couldn't assign flavors to pod set main: resource example.com/gpu unavailable in "
            "ClusterQueue");
}

}  // namespace
TEST(FormatConsideredFlavorsTest, KueuesEventDetail) {
  Assignment a;
  a.considered.push_back(
      {"main",
       {{"on-demand", "NoFit", "", 0, {"insufficient quota for cpu in flavor on-demand"}},
        {"spot", "Fit", "", 1, {}}}});
  a.considered.push_back({"workers",
                          {{"default", "Preempt", "Preempt", 0,
                            {"insufficient unused quota for cpu in flavor default, 1 more needed"}},
                           {"plain", "Fit", "", 0, {}}}});
  EXPECT_EQ(FormatConsideredFlavors(a),
            "main: on-demand(NoFit;insufficient quota for cpu in flavor on-demand), "
            "spot(Fit;borrow=1) | workers: default(preemptionMode=Preempt;insufficient unused "
            "quota for cpu in flavor default, 1 more needed)");
  Assignment plain;
  plain.considered.push_back({"main", {{"default", "Fit", "", 0, {}}}});
  EXPECT_EQ(FormatConsideredFlavors(plain), "");
}

}  // namespace admitd::engine
