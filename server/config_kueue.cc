// Kueue Configuration sections read as Kueue spells them (see config_kueue.h).
#include "server/config_kueue.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace admitd {
namespace {

constexpr char kFinalShare[] = "LessThanOrEqualToFinalShare";
constexpr char kInitialShare[] = "LessThanInitialShare";

// Kueue's valid preemptionStrategies lists (pkg/config/validation.go): one strategy, or both in
// this order.
const std::vector<std::vector<std::string>>& ValidStrategies() {
  static const auto* valid = new std::vector<std::vector<std::string>>{
      {kFinalShare}, {kInitialShare}, {kFinalShare, kInitialShare}};
  return *valid;
}

}  // namespace

void AddKueueSections(settings::Table* table, Config* c) {
  using namespace settings;  // NOLINT: the parsers read as a declaration
  table->Add({.key = "fairSharing",
              .help = "Kueue's fair sharing (docs/semantics.md): on when the section is present "
                      "(v1beta2), or as its `enable` says (v1beta1)",
              .section = true,
              .parse = Bool(&c->fair_sharing)});
  table->Add({.key = "fairSharing.enable",
              .help = "v1beta1's switch for fair sharing (v1beta2 has none: the section is it)",
              .parse = [c](const std::string& text) {
                bool on = false;
                if (absl::Status s = settings::Bool(&on)(text); !s.ok()) return s;
                c->fair_sharing_enable = on;
                return absl::OkStatus();
              }});
  table->Add({.key = "fairSharing.preemptionStrategies",
              .help = "how preemption across the cohort compares shares, tried in order: "
                      "LessThanOrEqualToFinalShare, LessThanInitialShare or both",
              .default_text = "both, with v1beta1's enable",
              .parse = List(&c->fair_sharing_preemption_strategies)});
}

absl::Status ResolveKueueSections(Config* c) {
  if (c->fair_sharing_enable.has_value()) c->fair_sharing = *c->fair_sharing_enable;
  if (!c->fair_sharing) return absl::OkStatus();
  std::vector<std::string>& strategies = c->fair_sharing_preemption_strategies;
  if (strategies.empty()) {
    // v1beta1 defaults the list when enabled; v1beta2 requires it.
    if (!c->fair_sharing_enable.has_value()) {
      return absl::InvalidArgumentError(
          "fairSharing.preemptionStrategies: Required value: must be specified");
    }
    strategies = {kFinalShare, kInitialShare};
  }
  for (const std::vector<std::string>& valid : ValidStrategies()) {
    if (strategies == valid) return absl::OkStatus();
  }
  std::vector<std::string> supported;
  for (const std::vector<std::string>& valid : ValidStrategies()) {
    supported.push_back(absl::StrCat("\"", absl::StrJoin(valid, ","), "\""));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "fairSharing.preemptionStrategies: Unsupported value: \"", absl::StrJoin(strategies, ","),
      "\": supported values: ", absl::StrJoin(supported, ", ")));
}

}  // namespace admitd
