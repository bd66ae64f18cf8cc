#include "server/pods/role_hash.h"

#include <functional>
#include <string>

#include "gtest/gtest.h"
#include "server/pods/pod_group.h"

namespace admitd::pods {
namespace {

v1::PodSpec CpuPod(const std::string& cpu) {
  v1::PodSpec spec;
  v1::Container* c = spec.add_containers();
  c->set_name("c");
  (*c->mutable_resources()->mutable_requests())["cpu"] = cpu;
  return spec;
}

std::string Hash(const v1::PodSpec& spec) {
  absl::StatusOr<std::string> h = ComputeRoleHash(spec);
  EXPECT_TRUE(h.ok()) << h.status();
  return h.value_or("");
}

TEST(RoleHashTest, KnownKueueHashes) {
  EXPECT_EQ(Hash(CpuPod("1")), "dc85db45");
  v1::PodSpec spec = CpuPod("1");
  (*spec.mutable_containers(0)->mutable_resources()->mutable_requests())["memory"] = "1Gi";
  EXPECT_EQ(Hash(spec), "4ebdd4a6");
}

TEST(RoleHashTest, ShapeJsonForOneCpuContainer) {
  EXPECT_EQ(*RoleShapeJson(CpuPod("1")),
            R"({"spec":{"affinity":null,"containers":[{"ports":null,"resources":{"requests":{"cpu":"1"}}}],)"
            R"("initContainers":null,"nodeSelector":null,"overhead":null,"priority":null,)"
            R"("resourceClaims":null,"runtimeClassName":null,"tolerations":null,)"
            R"("topologySpreadConstraints":null}})");
}

TEST(RoleHashTest, EquivalentQuantitiesHashTheSame) {
  EXPECT_EQ(Hash(CpuPod("1000m")), "dc85db45");
  v1::PodSpec spec = CpuPod("1");
  (*spec.mutable_containers(0)->mutable_resources()->mutable_requests())["memory"] = "1024Mi";
  EXPECT_EQ(Hash(spec), "4ebdd4a6");
}

TEST(RoleHashTest, FieldsThatDoNotChangeTheHash) {
  struct Case {
    const char* name;
    std::function<void(v1::PodSpec*)> mutate;
  } cases[] = {
      {"container name", [](v1::PodSpec* s) { s->mutable_containers(0)->set_name("other"); }},
      {"limits",
       [](v1::PodSpec* s) {
         (*s->mutable_containers(0)->mutable_resources()->mutable_limits())["cpu"] = "4";
         (*s->mutable_containers(0)->mutable_resources()->mutable_limits())["memory"] = "8Gi";
       }},
      {"restart policy", [](v1::PodSpec* s) { s->mutable_containers(0)->set_restart_policy("Always"); }},
      {"priority class name", [](v1::PodSpec* s) { s->set_priority_class_name("high"); }},
  };
  for (const auto& c : cases) {
    v1::PodSpec spec = CpuPod("1");
    c.mutate(&spec);
    EXPECT_EQ(Hash(spec), "dc85db45") << c.name;
  }
}

TEST(RoleHashTest, PodMetadataDoesNotChangeTheHash) {
  // Image, command, env and volumes are not in the model at all; labels and other annotations
  // live outside the spec.
  v1::PodObservation pod;
  *pod.mutable_spec() = CpuPod("1");
  (*pod.mutable_labels())["app"] = "x";
  (*pod.mutable_labels())[kQueueNameLabel] = "q";
  (*pod.mutable_annotations())["note"] = "y";
  EXPECT_EQ(*RoleHash(pod), "dc85db45");
}

TEST(RoleHashTest, FieldsThatChangeTheHash) {
  struct Case {
    const char* name;
    std::function<void(v1::PodSpec*)> mutate;
    const char* want;  // "" = only "differs from dc85db45"
  } cases[] = {
      {"cpu 2", [](v1::PodSpec* s) { (*s->mutable_containers(0)->mutable_resources()->mutable_requests())["cpu"] = "2"; }, "21a4619c"},
      {"node selector", [](v1::PodSpec* s) { (*s->mutable_node_selector())["pool"] = "a"; }, "2aac6836"},
      {"priority", [](v1::PodSpec* s) { s->set_priority(100); }, "cb78a3cb"},
      {"pod-level resources", [](v1::PodSpec* s) { (*s->mutable_resources()->mutable_requests())["cpu"] = "1"; }, "0927209e"},
      {"second container", [](v1::PodSpec* s) { *s->add_containers() = s->containers(0); }, "0910f76b"},
      {"port", [](v1::PodSpec* s) { s->mutable_containers(0)->add_ports()->set_container_port(80); }, ""},
      {"toleration", [](v1::PodSpec* s) { s->add_tolerations()->set_key("k"); }, ""},
      {"runtime class", [](v1::PodSpec* s) { s->set_runtime_class_name("gvisor"); }, ""},
      {"init container", [](v1::PodSpec* s) { *s->add_init_containers() = s->containers(0); }, ""},
      {"overhead", [](v1::PodSpec* s) { (*s->mutable_overhead())["cpu"] = "100m"; }, ""},
      {"required affinity", [](v1::PodSpec* s) { s->add_required_node_affinity()->add_match_expressions()->set_key("k"); }, ""},
      {"anti affinity", [](v1::PodSpec* s) { s->mutable_pod_anti_affinity(); }, ""},
      {"spread", [](v1::PodSpec* s) { s->add_topology_spread_constraints()->set_max_skew(1); }, ""},
      {"claim", [](v1::PodSpec* s) { s->add_resource_claims()->set_name("gpu"); }, ""},
  };
  for (const auto& c : cases) {
    v1::PodSpec spec = CpuPod("1");
    c.mutate(&spec);
    const std::string h = Hash(spec);
    EXPECT_NE(h, "dc85db45") << c.name;
    if (*c.want != '\0') {
      EXPECT_EQ(h, c.want) << c.name;
    }
  }
}

TEST(RoleHashTest, StructFieldOrderAndOmitEmpty) {
  v1::PodSpec spec = CpuPod("1");
  v1::ContainerPort* port = spec.mutable_containers(0)->add_ports();
  port->set_name("http");
  port->set_container_port(8080);
  port->set_protocol("TCP");
  v1::Toleration* t = spec.add_tolerations();
  t->set_key("gpu");
  t->set_operator_("Exists");
  t->set_effect("NoSchedule");
  t->set_toleration_seconds(30);
  v1::NodeSelectorRequirement* r = spec.add_required_node_affinity()->add_match_expressions();
  r->set_key("zone");
  r->set_operator_("In");
  r->add_values("a&b");
  v1::TopologySpreadConstraint* tsc = spec.add_topology_spread_constraints();
  tsc->set_max_skew(1);
  tsc->set_topology_key("zone");
  tsc->set_when_unsatisfiable("DoNotSchedule");
  (*tsc->mutable_label_selector()->mutable_match_labels())["app"] = "x";
  spec.add_resource_claims()->set_name("gpu");
  spec.mutable_resource_claims(0)->set_resource_claim_template_name("tpl");
  spec.set_runtime_class_name("gvisor");
  EXPECT_EQ(*RoleShapeJson(spec),
            R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":)"
            R"({"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a\u0026b"]}]}]}}},)"
            R"("containers":[{"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],)"
            R"("resources":{"requests":{"cpu":"1"}}}],"initContainers":null,"nodeSelector":null,)"
            R"("overhead":null,"priority":null,"resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"tpl"}],)"
            R"("runtimeClassName":"gvisor","tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule",)"
            R"("tolerationSeconds":30}],"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone",)"
            R"("whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"x"}}}]}})");
}

TEST(RoleHashTest, AnnotationWins) {
  v1::PodObservation pod;
  *pod.mutable_spec() = CpuPod("1");
  (*pod.mutable_annotations())[kRoleHashAnnotation] = "abcdef01";
  EXPECT_EQ(*RoleHash(pod), "abcdef01");
}

TEST(RoleHashTest, MalformedQuantityIsAnError) {
  EXPECT_FALSE(ComputeRoleHash(CpuPod("lots")).ok());
}

}  // namespace
}  // namespace admitd::pods
