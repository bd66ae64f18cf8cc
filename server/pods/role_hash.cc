#include "server/pods/role_hash.h"

#include <openssl/sha.h>

#include <cstdio>

#include "absl/status/status.h"
#include "server/pods/go_quantity.h"
#include "server/pods/pod_group.h"

namespace admitd::pods {
namespace {

using V = GoJsonValue;

// map[ResourceName]Quantity: nil (null) when empty.
absl::StatusOr<V> ResourceList(const google::protobuf::Map<std::string, std::string>& m) {
  if (m.empty()) return V::Null();
  V out = V::Map();
  for (const auto& [name, quantity] : m) {
    absl::StatusOr<std::string> canonical = CanonicalQuantity(quantity);
    if (!canonical.ok()) return canonical.status();
    out.Set(name, V::String(*canonical));
  }
  return out;
}

V StringMap(const google::protobuf::Map<std::string, std::string>& m) {
  if (m.empty()) return V::Null();
  V out = V::Map();
  for (const auto& [k, v] : m) out.Set(k, V::String(v));
  return out;
}

template <typename Repeated>
V StringList(const Repeated& values) {
  V out = V::Array();
  for (const auto& s : values) out.Push(V::String(s));
  return out;
}

V Port(const v1::ContainerPort& p) {
  V out = V::Struct();
  if (!p.name().empty()) out.Set("name", V::String(p.name()));
  if (p.host_port() != 0) out.Set("hostPort", V::Int(p.host_port()));
  out.Set("containerPort", V::Int(p.container_port()));
  if (!p.protocol().empty()) out.Set("protocol", V::String(p.protocol()));
  if (!p.host_ip().empty()) out.Set("hostIP", V::String(p.host_ip()));
  return out;
}

absl::StatusOr<V> Containers(const google::protobuf::RepeatedPtrField<v1::Container>& containers) {
  if (containers.empty()) return V::Null();
  V out = V::Array();
  for (const v1::Container& c : containers) {
    V shape = V::Map();
    V resources = V::Map();
    absl::StatusOr<V> requests = ResourceList(c.resources().requests());
    if (!requests.ok()) return requests.status();
    resources.Set("requests", std::move(*requests));
    shape.Set("resources", std::move(resources));
    if (c.ports().empty()) {
      shape.Set("ports", V::Null());
    } else {
      V ports = V::Array();
      for (const auto& p : c.ports()) ports.Push(Port(p));
      shape.Set("ports", std::move(ports));
    }
    out.Push(std::move(shape));
  }
  return out;
}

V Requirement(const v1::NodeSelectorRequirement& r) {
  V out = V::Struct();
  out.Set("key", V::String(r.key()));
  out.Set("operator", V::String(r.operator_()));
  if (!r.values().empty()) out.Set("values", StringList(r.values()));
  return out;
}

V Term(const v1::NodeSelectorTerm& t) {
  V out = V::Struct();
  if (!t.match_expressions().empty()) {
    V list = V::Array();
    for (const auto& r : t.match_expressions()) list.Push(Requirement(r));
    out.Set("matchExpressions", std::move(list));
  }
  if (!t.match_fields().empty()) {
    V list = V::Array();
    for (const auto& r : t.match_fields()) list.Push(Requirement(r));
    out.Set("matchFields", std::move(list));
  }
  return out;
}

V Selector(const v1::LabelSelector& s) {
  V out = V::Struct();
  if (!s.match_labels().empty()) out.Set("matchLabels", StringMap(s.match_labels()));
  if (!s.match_expressions().empty()) {
    V list = V::Array();
    for (const auto& r : s.match_expressions()) {
      V req = V::Struct();
      req.Set("key", V::String(r.key()));
      req.Set("operator", V::String(r.operator_()));
      if (!r.values().empty()) req.Set("values", StringList(r.values()));
      list.Push(std::move(req));
    }
    out.Set("matchExpressions", std::move(list));
  }
  return out;
}

V AffinityTerm(const v1::PodAffinityTerm& t) {
  V out = V::Struct();
  if (t.has_label_selector()) out.Set("labelSelector", Selector(t.label_selector()));
  if (!t.namespaces().empty()) out.Set("namespaces", StringList(t.namespaces()));
  out.Set("topologyKey", V::String(t.topology_key()));
  if (t.has_namespace_selector()) out.Set("namespaceSelector", Selector(t.namespace_selector()));
  if (!t.match_label_keys().empty()) out.Set("matchLabelKeys", StringList(t.match_label_keys()));
  if (!t.mismatch_label_keys().empty()) {
    out.Set("mismatchLabelKeys", StringList(t.mismatch_label_keys()));
  }
  return out;
}

V PodAffinity(const v1::PodAffinity& a) {
  V out = V::Struct();
  if (!a.required_during_scheduling().empty()) {
    V list = V::Array();
    for (const auto& t : a.required_during_scheduling()) list.Push(AffinityTerm(t));
    out.Set("requiredDuringSchedulingIgnoredDuringExecution", std::move(list));
  }
  if (!a.preferred_during_scheduling().empty()) {
    V list = V::Array();
    for (const auto& w : a.preferred_during_scheduling()) {
      V weighted = V::Struct();
      weighted.Set("weight", V::Int(w.weight()));
      weighted.Set("podAffinityTerm", AffinityTerm(w.pod_affinity_term()));
      list.Push(std::move(weighted));
    }
    out.Set("preferredDuringSchedulingIgnoredDuringExecution", std::move(list));
  }
  return out;
}

// *Affinity: null unless some part is set.
V Affinity(const v1::PodSpec& spec) {
  const bool node = !spec.required_node_affinity().empty() || !spec.preferred_node_affinity().empty();
  if (!node && !spec.has_pod_affinity() && !spec.has_pod_anti_affinity()) return V::Null();
  V out = V::Struct();
  if (node) {
    V na = V::Struct();
    if (!spec.required_node_affinity().empty()) {
      V selector = V::Struct();
      V terms = V::Array();
      for (const auto& t : spec.required_node_affinity()) terms.Push(Term(t));
      selector.Set("nodeSelectorTerms", std::move(terms));
      na.Set("requiredDuringSchedulingIgnoredDuringExecution", std::move(selector));
    }
    if (!spec.preferred_node_affinity().empty()) {
      V list = V::Array();
      for (const auto& p : spec.preferred_node_affinity()) {
        V pref = V::Struct();
        pref.Set("weight", V::Int(p.weight()));
        pref.Set("preference", Term(p.preference()));
        list.Push(std::move(pref));
      }
      na.Set("preferredDuringSchedulingIgnoredDuringExecution", std::move(list));
    }
    out.Set("nodeAffinity", std::move(na));
  }
  if (spec.has_pod_affinity()) out.Set("podAffinity", PodAffinity(spec.pod_affinity()));
  if (spec.has_pod_anti_affinity()) out.Set("podAntiAffinity", PodAffinity(spec.pod_anti_affinity()));
  return out;
}

V Tolerations(const v1::PodSpec& spec) {
  if (spec.tolerations().empty()) return V::Null();
  V out = V::Array();
  for (const v1::Toleration& t : spec.tolerations()) {
    V tol = V::Struct();
    if (!t.key().empty()) tol.Set("key", V::String(t.key()));
    if (!t.operator_().empty()) tol.Set("operator", V::String(t.operator_()));
    if (!t.value().empty()) tol.Set("value", V::String(t.value()));
    if (!t.effect().empty()) tol.Set("effect", V::String(t.effect()));
    if (t.has_toleration_seconds()) tol.Set("tolerationSeconds", V::Int(t.toleration_seconds()));
    out.Push(std::move(tol));
  }
  return out;
}

V SpreadConstraints(const v1::PodSpec& spec) {
  if (spec.topology_spread_constraints().empty()) return V::Null();
  V out = V::Array();
  for (const v1::TopologySpreadConstraint& c : spec.topology_spread_constraints()) {
    V tsc = V::Struct();
    tsc.Set("maxSkew", V::Int(c.max_skew()));
    tsc.Set("topologyKey", V::String(c.topology_key()));
    tsc.Set("whenUnsatisfiable", V::String(c.when_unsatisfiable()));
    if (c.has_label_selector()) tsc.Set("labelSelector", Selector(c.label_selector()));
    if (c.has_min_domains()) tsc.Set("minDomains", V::Int(c.min_domains()));
    if (c.has_node_affinity_policy()) tsc.Set("nodeAffinityPolicy", V::String(c.node_affinity_policy()));
    if (c.has_node_taints_policy()) tsc.Set("nodeTaintsPolicy", V::String(c.node_taints_policy()));
    if (!c.match_label_keys().empty()) tsc.Set("matchLabelKeys", StringList(c.match_label_keys()));
    out.Push(std::move(tsc));
  }
  return out;
}

V ResourceClaims(const v1::PodSpec& spec) {
  if (spec.resource_claims().empty()) return V::Null();
  V out = V::Array();
  for (const v1::PodResourceClaim& c : spec.resource_claims()) {
    V claim = V::Struct();
    claim.Set("name", V::String(c.name()));
    if (c.has_resource_claim_name()) claim.Set("resourceClaimName", V::String(c.resource_claim_name()));
    if (c.has_resource_claim_template_name()) {
      claim.Set("resourceClaimTemplateName", V::String(c.resource_claim_template_name()));
    }
    out.Push(std::move(claim));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> RoleShapeJson(const v1::PodSpec& spec) {
  V shape = V::Map();
  absl::StatusOr<V> init = Containers(spec.init_containers());
  if (!init.ok()) return init.status();
  absl::StatusOr<V> containers = Containers(spec.containers());
  if (!containers.ok()) return containers.status();
  absl::StatusOr<V> overhead = ResourceList(spec.overhead());
  if (!overhead.ok()) return overhead.status();
  shape.Set("initContainers", std::move(*init));
  shape.Set("containers", std::move(*containers));
  shape.Set("nodeSelector", StringMap(spec.node_selector()));
  shape.Set("affinity", Affinity(spec));
  shape.Set("tolerations", Tolerations(spec));
  shape.Set("runtimeClassName",
            spec.has_runtime_class_name() ? V::String(spec.runtime_class_name()) : V::Null());
  shape.Set("priority", spec.has_priority() ? V::Int(spec.priority()) : V::Null());
  shape.Set("topologySpreadConstraints", SpreadConstraints(spec));
  shape.Set("overhead", std::move(*overhead));
  shape.Set("resourceClaims", ResourceClaims(spec));
  if (spec.has_resources()) {
    absl::StatusOr<V> requests = ResourceList(spec.resources().requests());
    if (!requests.ok()) return requests.status();
    shape.Set("resources", std::move(*requests));
  }
  V root = V::Map();
  root.Set("spec", std::move(shape));
  return root.Serialize();
}

absl::StatusOr<std::string> ComputeRoleHash(const v1::PodSpec& spec) {
  absl::StatusOr<std::string> json = RoleShapeJson(spec);
  if (!json.ok()) return json.status();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(json->data()), json->size(), digest);
  char hex[9];
  std::snprintf(hex, sizeof(hex), "%02x%02x%02x%02x", digest[0], digest[1], digest[2], digest[3]);
  return std::string(hex, 8);
}

absl::StatusOr<std::string> RoleHash(const v1::PodObservation& pod) {
  if (auto it = pod.annotations().find(kRoleHashAnnotation); it != pod.annotations().end()) {
    return it->second;
  }
  return ComputeRoleHash(pod.spec());
}

}  // namespace admitd::pods
