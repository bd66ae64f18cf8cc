#include "clients/shim/framework/integration.h"

#include <openssl/sha.h>

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "clients/shim/framework/elastic_pods.h"
#include "clients/shim/framework/interfaces.h"
#include "common/kueue_keys.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {
namespace {

// /api/v1 for the core group, /apis/<group>/<version> for the others.
std::string ApiRoot(const std::string& api_version) {
  return api_version.find('/') == std::string::npos ? "/api/" + api_version
                                                     : "/apis/" + api_version;
}

class EmptyCache : public ObjectCache {
 public:
  std::optional<nlohmann::json> Get(const std::string&) const override { return std::nullopt; }
  std::vector<nlohmann::json> Select(
      const std::function<bool(const nlohmann::json&)>&) const override {
    return {};
  }
  std::vector<nlohmann::json> ControlledBy(const std::string&) const override { return {}; }
  std::vector<std::string> Keys() const override { return {}; }
};

}  // namespace

const ObjectCache& NoObjects() {
  static const EmptyCache kEmpty;
  return kEmpty;
}

std::string ContainersDigestOf(const nlohmann::json& pod_template) {
  const nlohmann::json& spec = Field(pod_template, "spec");
  auto list = [&](const char* key) {
    const nlohmann::json& v = Field(spec, key);
    return v.is_null() ? nlohmann::json::array() : v;
  };
  const std::string text =
      nlohmann::json{{"containers", list("containers")}, {"initContainers", list("initContainers")}}
          .dump();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), 16));
}

absl::StatusOr<std::string> GenericJob::ContainersDigest() const {
  absl::StatusOr<std::vector<nlohmann::json>> templates = PodTemplates();
  if (!templates.ok()) return templates.status();
  nlohmann::json containers = nlohmann::json::array(), init_containers = nlohmann::json::array();
  for (const nlohmann::json& t : *templates) {
    const nlohmann::json& spec = Field(t, "spec");
    const nlohmann::json& c = Field(spec, "containers");
    const nlohmann::json& i = Field(spec, "initContainers");
    containers.push_back(c.is_null() ? nlohmann::json::array() : c);
    init_containers.push_back(i.is_null() ? nlohmann::json::array() : i);
  }
  return ContainersDigestOf(
      {{"spec", {{"containers", containers}, {"initContainers", init_containers}}}});
}

Integration::Integration(IntegrationInfo info, WrapFn wrap, PodOwnerFn owner_key_of_pod,
                         WebhookFn webhook)
    : info_(std::move(info)),
      wrap_(std::move(wrap)),
      owner_key_of_pod_(std::move(owner_key_of_pod)),
      webhook_(std::move(webhook)) {}

Integration::Integration(IntegrationInfo info, WrapFn wrap, PodOwnerFn owner_key_of_pod,
                         WebhookFn webhook, PodPatchFn pod_patch)
    : info_(std::move(info)),
      wrap_(std::move(wrap)),
      owner_key_of_pod_(std::move(owner_key_of_pod)),
      webhook_(std::move(webhook)),
      pod_patch_(std::move(pod_patch)) {}

bool ElasticPod(const nlohmann::json& pod) {
  return HasElasticGate(pod) ||
         Field(Field(pod, "metadata"), "annotations").contains(kSliceNameAnnotation);
}

std::string ControllerKeyOfPod(const nlohmann::json& pod, const std::string& api_version,
                               const std::string& kind) {
  const nlohmann::json& meta = Field(pod, "metadata");
  const nlohmann::json& refs = Field(meta, "ownerReferences");
  if (!refs.is_array()) return "";
  for (const nlohmann::json& ref : refs) {
    if (ref.is_object() && ref.value("controller", false) &&
        (kind.empty() || Str(ref, "kind") == kind) &&
        (api_version.empty() || Str(ref, "apiVersion") == api_version)) {
      return Str(meta, "namespace") + "/" + Str(ref, "name");
    }
  }
  return "";
}

std::string Integration::CollectionPath() const {
  return absl::StrCat(ApiRoot(info_.api_version), "/", info_.resource);
}

std::string Integration::ObjectPath(const std::string& ns, const std::string& name) const {
  return absl::StrCat(ApiRoot(info_.api_version), "/namespaces/", ns, "/", info_.resource, "/",
                      name);
}

void IntegrationRegistry::Register(std::unique_ptr<Integration> integration) {
  integrations_.push_back(std::move(integration));
}

const Integration* IntegrationRegistry::Find(const std::string& name) const {
  for (const auto& i : integrations_) {
    if (i->info().name == name) return i.get();
  }
  return nullptr;
}

const Integration* IntegrationRegistry::ForKind(const std::string& api_version,
                                                const std::string& kind) const {
  for (const auto& i : integrations_) {
    if (i->info().api_version == api_version && i->info().kind == kind) return i.get();
  }
  return nullptr;
}

std::vector<const Integration*> IntegrationRegistry::All() const {
  std::vector<const Integration*> out;
  for (const auto& i : integrations_) out.push_back(i.get());
  return out;
}

bool IntegrationRegistry::OwnedByManagedKind(const nlohmann::json& object) const {
  const nlohmann::json& refs = Field(Field(object, "metadata"), "ownerReferences");
  if (!refs.is_array()) return false;
  for (const nlohmann::json& ref : refs) {
    if (!ref.is_object() || !ref.value("controller", false)) continue;
    const std::string kind = Str(ref, "kind"), api_version = Str(ref, "apiVersion");
    if (kind == "Pod" && api_version == "v1") return true;
    const Integration* owner = ForKind(api_version, kind);
    return owner != nullptr && owner->HasGenericJob() && !owner->info().admitted_as_pods;
  }
  return false;
}

}  // namespace admitd::shim
