#include "clients/shim/kube/leader_election.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace admitd::shim {
namespace {

// A MicroTime: RFC 3339 with microseconds, in UTC.
std::string MicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

void SleepUnless(const std::atomic<bool>& stopped, absl::Duration d) {
  for (absl::Time until = absl::Now() + d; absl::Now() < until && !stopped.load();) {
    absl::SleepFor(std::min(absl::Milliseconds(50), until - absl::Now()));
  }
}

}  // namespace

LeaderElector::LeaderElector(const KubeClient& client, LeaderElectionConfig config,
                             std::function<absl::Time()> clock)
    : client_(client), config_(std::move(config)), clock_(std::move(clock)) {}

std::string LeaderElector::LeasePath() const {
  return absl::StrCat("/apis/coordination.k8s.io/v1/namespaces/", config_.ns, "/leases/",
                      config_.name);
}

absl::StatusOr<bool> LeaderElector::TryAcquireOrRenew() {
  const absl::Time now = clock_();
  const int32_t duration = static_cast<int32_t>(absl::ToInt64Seconds(config_.lease_duration));
  absl::StatusOr<nlohmann::json> lease = client_.Get(LeasePath());
  if (lease.status().code() == absl::StatusCode::kNotFound) {
    nlohmann::json created = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.name}, {"namespace", config_.ns}}},
        {"spec",
         {{"holderIdentity", config_.identity},
          {"leaseDurationSeconds", duration},
          {"acquireTime", MicroTime(now)},
          {"renewTime", MicroTime(now)},
          {"leaseTransitions", 0}}}};
    absl::StatusOr<nlohmann::json> made = client_.Create(
        absl::StrCat("/apis/coordination.k8s.io/v1/namespaces/", config_.ns, "/leases"), created);
    if (made.status().code() == absl::StatusCode::kAlreadyExists) return false;  // lost the race
    if (!made.ok()) return made.status();
    observed_record_ = (*made)["spec"].dump();
    observed_at_ = now;
    return true;
  }
  if (!lease.ok()) return lease.status();
  const nlohmann::json spec = lease->value("spec", nlohmann::json::object());
  if (spec.dump() != observed_record_) {
    observed_record_ = spec.dump();
    observed_at_ = now;
  }
  const std::string holder = spec.value("holderIdentity", "");
  const absl::Duration held_for = absl::Seconds(spec.value("leaseDurationSeconds", duration));
  if (!holder.empty() && holder != config_.identity && observed_at_ + held_for > now) {
    return false;  // someone else leads, and was seen renewing
  }
  nlohmann::json update = *lease;
  nlohmann::json& s = update["spec"];
  s["holderIdentity"] = config_.identity;
  s["leaseDurationSeconds"] = duration;
  s["renewTime"] = MicroTime(now);
  if (holder != config_.identity) {
    s["acquireTime"] = MicroTime(now);
    s["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  absl::StatusOr<nlohmann::json> written = client_.Update(LeasePath(), update);
  if (written.status().code() == absl::StatusCode::kAborted) return false;  // lost the race
  if (!written.ok()) return written.status();
  observed_record_ = (*written)["spec"].dump();
  observed_at_ = now;
  return true;
}

absl::Status LeaderElector::Release() {
  absl::StatusOr<nlohmann::json> lease = client_.Get(LeasePath());
  if (!lease.ok()) return lease.status();
  nlohmann::json& spec = (*lease)["spec"];
  if (spec.value("holderIdentity", "") != config_.identity) return absl::OkStatus();
  const absl::Time now = clock_();
  spec["holderIdentity"] = "";
  spec["leaseDurationSeconds"] = 1;
  spec["renewTime"] = MicroTime(now);
  spec["acquireTime"] = MicroTime(now);
  return client_.Update(LeasePath(), *lease).status();
}

void LeaderElector::Run(const std::function<void()>& on_started,
                        const std::function<void()>& on_stopped) {
  std::string last_error;
  while (!stopped_.load()) {
    absl::StatusOr<bool> got = TryAcquireOrRenew();
    if (got.ok() && *got) break;
    // An error (RBAC, a missing namespace) is logged once until it changes.
    if (!got.ok() && got.status().ToString() != last_error) {
      last_error = got.status().ToString();
      ADMITD_LOG(kWarning, "cannot acquire the lease",
                 {{"lease", absl::StrCat(config_.ns, "/", config_.name)}, {"error", last_error}});
    }
    SleepUnless(stopped_, config_.retry_period);
  }
  if (stopped_.load()) return;
  leading_.store(true);
  if (on_started) on_started();
  absl::Time renewed = absl::Now();
  while (!stopped_.load()) {
    SleepUnless(stopped_, config_.retry_period);
    if (stopped_.load()) break;
    absl::StatusOr<bool> kept = TryAcquireOrRenew();
    if (!kept.ok()) {
      ADMITD_LOG(kWarning, "cannot renew the lease",
                 {{"lease", absl::StrCat(config_.ns, "/", config_.name)},
                  {"error", kept.status().ToString()}});
    }
    if (kept.ok() && *kept) {
      renewed = absl::Now();
    } else if (absl::Now() - renewed > config_.renew_deadline || (kept.ok() && !*kept)) {
      break;  // another holder took the lease, or it could not be renewed in time
    }
  }
  leading_.store(false);
  if (on_stopped) on_stopped();
}

}  // namespace admitd::shim
