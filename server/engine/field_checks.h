// The field checks the validation files share (validation.cc, validation_workload.cc): names,
// enumerations, quantities, resource lists, tolerations and priorities, each reported as
// Kubernetes' API server words it ("Invalid value: \"-1\": must be greater than or equal to 0").
//
//   Violations out;
//   CheckName(&out, "metadata.name", name, /*label=*/false);
//   CheckEnum(&out, "spec.stopPolicy", policy, {"None", "Hold", "HoldAndDrain"});
//
// Thread safety: pure functions.
#ifndef ADMITD_SERVER_ENGINE_FIELD_CHECKS_H_
#define ADMITD_SERVER_ENGINE_FIELD_CHECKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "admitd/v1/objects.pb.h"
#include "server/engine/validation.h"

namespace admitd::engine {

// `s` in double quotes, as Go's %q writes a plain string.
std::string Quote(absl::string_view s);

// A name field: required, at most 63 (a DNS label) or 253 (a DNS subdomain) characters, and of
// that format. The first form builds `field` only for a violation (most names are valid).
void CheckName(Violations* out, absl::FunctionRef<std::string()> field, const std::string& name,
               bool label);
void CheckName(Violations* out, absl::string_view field, const std::string& name, bool label);

// A value that is empty (defaulted) or one of `allowed`.
void CheckEnum(Violations* out, const std::string& field, const std::string& value,
               const std::vector<std::string>& allowed);

// A quantity of `resource` that parses and is not negative.
void CheckQuantity(Violations* out, const std::string& field, const std::string& resource,
                   const std::string& text);

// Every quantity of a resource list; `field` names the list and is built only for a violation.
void CheckResourceList(Violations* out, absl::FunctionRef<std::string()> field,
                       const google::protobuf::Map<std::string, std::string>& list);

void CheckTolerations(Violations* out, const std::string& field,
                      const google::protobuf::RepeatedPtrField<v1::Toleration>& tolerations);

// Kubernetes' pod priorities end at system-node-critical's 2000001000; admitd holds workload
// priorities to the same range on both sides, so no priority arithmetic can overflow.
void CheckPriority(Violations* out, const std::string& field, int64_t priority);

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_FIELD_CHECKS_H_
