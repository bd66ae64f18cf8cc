// Kueue Configuration sections read as Kueue spells them (see config_kueue.h).
#include "server/config_kueue.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

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

// Kueue's field errors for its Configuration's numbers: "Invalid value: -1: must be greater
// than or equal to 0".
settings::Parser NonNegativeInt(int64_t* out) {
  return [out](const std::string& text) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(text, &v)) {
      return absl::InvalidArgumentError(absl::StrCat("Invalid value: \"", text, "\": must be an integer"));
    }
    if (v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Invalid value: ", v, ": must be greater than or equal to 0"));
    }
    *out = v;
    return absl::OkStatus();
  };
}

// A Kubernetes duration ("5m", "1h30m", "0s"), not negative.
settings::Parser KubeDuration(std::optional<absl::Duration>* out) {
  return [out](const std::string& text) {
    absl::Duration d;
    if (!absl::ParseDuration(text, &d)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Invalid value: \"", text, "\": must be a duration such as 5m or 90s"));
    }
    if (d < absl::ZeroDuration()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Invalid value: \"", text, "\": must be greater than or equal to 0"));
    }
    *out = d;
    return absl::OkStatus();
  };
}

settings::Parser OptionalBool(std::optional<bool>* out) {
  return [out](const std::string& text) {
    bool v = false;
    if (absl::Status s = settings::Bool(&v)(text); !s.ok()) return s;
    *out = v;
    return absl::OkStatus();
  };
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
              .parse = OptionalBool(&c->fair_sharing_enable)});
  table->Add({.key = "fairSharing.preemptionStrategies",
              .help = "how preemption across the cohort compares shares, tried in order: "
                      "LessThanOrEqualToFinalShare, LessThanInitialShare or both",
              .default_text = "both, with v1beta1's enable",
              .parse = List(&c->fair_sharing_preemption_strategies)});
  table->Add({.key = "admissionFairSharing",
              .help = "Kueue's admission fair sharing (docs/semantics.md): on when the section is "
                      "present",
              .section = true,
              .parse = Bool(&c->admission_fair_sharing)});
  table->Add({.key = "admissionFairSharing.usageHalfLifeTime",
              .help = "how fast a LocalQueue's past usage fades: it counts half after this long; "
                      "0s: only what runs now",
              .default_text = "0s",
              .parse = KubeDuration(&c->afs_usage_half_life)});
  table->Add({.key = "admissionFairSharing.usageSamplingInterval",
              .help = "how often each LocalQueue's usage is sampled into its status",
              .default_text = "5m",
              .parse = [c](const std::string& text) {
                absl::Duration d;
                if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration()) {
                  return absl::InvalidArgumentError(absl::StrCat(
                      "Invalid value: \"", text, "\": must be greater than 0"));
                }
                c->afs_usage_sampling_interval = d;
                return absl::OkStatus();
              }});
  table->Add({.key = "admissionFairSharing.resourceWeights",
              .help = "the weight of each resource in a LocalQueue's usage, a mapping of resource "
                      "names to numbers; unlisted: 1",
              .parse = [c](const std::string& text) {
                std::map<std::string, double> weights;
                for (absl::string_view pair : absl::StrSplit(text, ',', absl::SkipEmpty())) {
                  const std::pair<std::string, std::string> kv =
                      absl::StrSplit(pair, absl::MaxSplits('=', 1));
                  double w = 0;
                  if (!absl::SimpleAtod(kv.second, &w)) {
                    return absl::InvalidArgumentError(absl::StrCat(
                        kv.first, ": Invalid value: \"", kv.second, "\": must be a number"));
                  }
                  if (w < 0) {
                    return absl::InvalidArgumentError(absl::StrCat(
                        kv.first, ": Invalid value: ", kv.second,
                        ": must be greater than or equal to 0"));
                  }
                  weights[kv.first] = w;
                }
                c->afs_resource_weights = std::move(weights);
                return absl::OkStatus();
              }});
  table->Add({.key = "waitForPodsReady",
              .help = "Kueue's waitForPodsReady (docs/semantics.md): on when the section is "
                      "present (v1beta2), or as its `enable` says (v1beta1)",
              .section = true,
              .parse = Bool(&c->wait_for_pods_ready)});
  table->Add({.key = "waitForPodsReady.enable",
              .help = "v1beta1's switch for waitForPodsReady",
              .parse = OptionalBool(&c->wait_for_pods_ready_enable)});
  table->Add({.key = "waitForPodsReady.timeout",
              .help = "how long an admitted workload's pods have to get ready before it is "
                      "evicted (PodsReadyTimeout)",
              .default_text = "30m; 5m with v1beta1's enable",
              .parse = KubeDuration(&c->pods_ready_timeout)});
  table->Add({.key = "waitForPodsReady.blockAdmission",
              .help = "admit nothing while a workload holding quota has not its pods ready",
              .default_text = "false; true with v1beta1's enable",
              .parse = OptionalBool(&c->pods_ready_block_admission)});
  table->Add({.key = "waitForPodsReady.recoveryTimeout",
              .help = "how long a workload whose pods stopped being ready has to recover before "
                      "it is evicted; 0s: no limit",
              .default_text = "the timeout",
              .parse = KubeDuration(&c->pods_ready_recovery_timeout)});
  table->Add({.key = "waitForPodsReady.requeuingStrategy.timestamp",
              .help = "where a workload evicted by the timeout queues from: its eviction "
                      "(Eviction) or its creation (Creation)",
              .default_text = "Eviction",
              .parse = [c](const std::string& text) {
                if (text != "Eviction" && text != "Creation") {
                  return absl::InvalidArgumentError(absl::StrCat(
                      "Unsupported value: \"", text,
                      "\": supported values: \"Creation\", \"Eviction\""));
                }
                c->pods_ready_timestamp = text;
                return absl::OkStatus();
              }});
  table->Add({.key = "waitForPodsReady.requeuingStrategy.backoffLimitCount",
              .help = "requeues before a workload is deactivated (requeuingBackoffLimitCount)",
              .default_text = "unlimited",
              .parse = NonNegativeInt(&c->backoff_limit_count)});
  table->Add({.key = "waitForPodsReady.requeuingStrategy.backoffBaseSeconds",
              .help = "the first requeue delay (requeuingBackoffBaseSeconds)",
              .default_text = "60",
              .parse = NonNegativeInt(&c->backoff_base_seconds)});
  table->Add({.key = "waitForPodsReady.requeuingStrategy.backoffMaxSeconds",
              .help = "the longest requeue delay (requeuingBackoffMaxSeconds)",
              .default_text = "3600",
              .parse = NonNegativeInt(&c->backoff_max_seconds)});
}

absl::Status ResolveKueueSections(Config* c) {
  // waitForPodsReady: v1beta1's enable decides, and brings v1beta1's defaults.
  const bool v1beta1 = c->wait_for_pods_ready_enable.has_value();
  if (v1beta1) c->wait_for_pods_ready = *c->wait_for_pods_ready_enable;
  if (c->wait_for_pods_ready) {
    if (!c->pods_ready_timeout.has_value() || *c->pods_ready_timeout == absl::ZeroDuration()) {
      c->pods_ready_timeout = v1beta1 ? absl::Minutes(5) : absl::Minutes(30);
    }
    if (!c->pods_ready_block_admission.has_value()) c->pods_ready_block_admission = v1beta1;
    if (!c->pods_ready_recovery_timeout.has_value()) {
      c->pods_ready_recovery_timeout = c->pods_ready_timeout;
    }
  }
  // admissionFairSharing: a sampling interval of 0 (or none) is defaulted to 5m.
  if (!c->afs_usage_sampling_interval.has_value() ||
      *c->afs_usage_sampling_interval == absl::ZeroDuration()) {
    c->afs_usage_sampling_interval = absl::Minutes(5);
  }
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
