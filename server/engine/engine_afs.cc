// Engine: admission fair sharing (§20 of the semantics; Kueue's KEP-4136). Each LocalQueue keeps
// a ledger of what its admitted workloads used, decayed with the configured half-life and
// sampled every usage sampling interval into its status (stored, so the history survives a
// restart), plus an entry penalty for each workload just reserved until its admission settles
// it. In a ClusterQueue whose admissionScope.admissionMode is UsageBasedAdmissionFairSharing, a
// LocalQueue's usage U = Σ weight_r × (consumed_r + penalty_r) / its weight orders the pending
// workloads before priority.
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/engine/quantity.h"

namespace admitd::engine {
namespace {

constexpr char kAfsTimerPrefix[] = "afs:";
constexpr char kUsageBased[] = "UsageBasedAdmissionFairSharing";

// An engine amount in the resource's natural unit (cores for CPU, as Kueue's
// AsApproximateFloat64 gives it).
double Natural(const std::string& resource, Amount amount) {
  const double v = static_cast<double>(amount);
  return resource == "cpu" ? v / 1000 : v;
}

std::string LocalQueueKeyOf(const v1::Workload& wl) {
  return absl::StrCat(wl.metadata().namespace_(), "/", wl.spec().queue_name());
}

}  // namespace

bool Engine::Impl::UsesAfs(const std::string& cluster_queue) const {
  if (!options_.admission_fair_sharing.enabled) return false;
  auto it = cluster_queues_.find(cluster_queue);
  return it != cluster_queues_.end() &&
         it->second.spec_object().spec().admission_scope().admission_mode() == kUsageBased;
}

double Engine::Impl::AfsUsage(const std::string& lq_key) const {
  double weight = 1;
  if (auto lq = local_queues_.find(lq_key); lq != local_queues_.end()) {
    const v1::LocalQueueSpec& spec = lq->second.local_queue().spec();
    if (spec.has_fair_sharing() && spec.fair_sharing().has_weight()) {
      absl::StatusOr<double> w = ParseQuantityAsDouble(spec.fair_sharing().weight());
      if (w.ok()) weight = *w;
    }
  }
  if (weight <= 0) return std::numeric_limits<double>::infinity();
  auto it = afs_.find(lq_key);
  if (it == afs_.end()) return 0;
  std::map<std::string, double> total = it->second.consumed;
  for (const auto& [wl, penalty] : it->second.penalties) {
    for (const auto& [resource, v] : penalty) total[resource] += v;
  }
  double usage = 0;  // summed in resource-name order, as Kueue sums it
  for (const auto& [resource, v] : total) {
    auto w = options_.admission_fair_sharing.resource_weights.find(resource);
    usage += (w == options_.admission_fair_sharing.resource_weights.end() ? 1.0 : w->second) * v;
  }
  return usage / weight;
}

namespace {

// alpha(elapsed, H) = 1 - 0.5^(elapsed / H); 0 for H = 0.
double Alpha(absl::Duration elapsed, absl::Duration half_life) {
  if (half_life <= absl::ZeroDuration()) return 0;
  return 1 - std::pow(0.5, absl::FDivDuration(elapsed, half_life));
}

// old × (1 − alpha) + cur × alpha, per resource of either.
void Decay(std::map<std::string, double>* consumed, const std::map<std::string, double>& cur,
           double alpha) {
  for (auto& [resource, v] : *consumed) v *= 1 - alpha;
  for (const auto& [resource, v] : cur) (*consumed)[resource] += v * alpha;
}

std::map<std::string, double> NaturalUsage(const std::map<std::string, Amount>& admitted) {
  std::map<std::string, double> out;
  for (const auto& [resource, v] : admitted) out[resource] = Natural(resource, v);
  return out;
}

}  // namespace

void Engine::Impl::AfsAdmittedDelta(const WorkloadEntry& entry, int sign) {
  if (!options_.admission_fair_sharing.enabled) return;
  std::map<std::string, Amount>& admitted = afs_[LocalQueueKeyOf(entry.object())].admitted;
  for (const auto& [fr, v] : entry.usage()) admitted[fr.second] += sign * static_cast<Amount>(v);
}

void Engine::Impl::AfsReserved(const WorkloadEntry& entry) {
  if (!UsesAfs(entry.cluster_queue)) return;
  const AdmissionFairSharingOptions& afs = options_.admission_fair_sharing;
  const double alpha = Alpha(afs.usage_sampling_interval, afs.usage_half_life);
  const std::string lq_key = LocalQueueKeyOf(entry.object());
  std::map<std::string, double>& penalty = afs_[lq_key].penalties[entry.key()];
  penalty.clear();
  for (const auto& [fr, v] : entry.usage()) {
    penalty[fr.second] += Natural(fr.second, static_cast<Amount>(v)) * alpha;
  }
  AfsRekey(lq_key);
}

void Engine::Impl::AfsSettle(const WorkloadEntry& entry, absl::Time now) {
  if (!UsesAfs(entry.cluster_queue)) return;
  const std::string lq_key = LocalQueueKeyOf(entry.object());
  AfsLedger& ledger = afs_[lq_key];
  const absl::Duration elapsed = ledger.last_update == absl::InfinitePast()
                                     ? absl::ZeroDuration()
                                     : std::max(absl::ZeroDuration(), now - ledger.last_update);
  Decay(&ledger.consumed, NaturalUsage(ledger.admitted),
        Alpha(elapsed, options_.admission_fair_sharing.usage_half_life));
  if (auto p = ledger.penalties.find(entry.key()); p != ledger.penalties.end()) {
    for (const auto& [resource, v] : p->second) ledger.consumed[resource] += v;
    ledger.penalties.erase(p);
  }
  ledger.last_update = std::max(ledger.last_update, now);
  AfsRekey(lq_key);
}

void Engine::Impl::AfsForget(const WorkloadEntry& entry) {
  if (!options_.admission_fair_sharing.enabled) return;
  const std::string lq_key = LocalQueueKeyOf(entry.object());
  auto it = afs_.find(lq_key);
  if (it != afs_.end() && it->second.penalties.erase(entry.key()) > 0) AfsRekey(lq_key);
}

void Engine::Impl::AfsRekey(const std::string& lq_key) {
  auto lq = local_queues_.find(lq_key);
  if (lq == local_queues_.end()) return;
  const std::string& cq_name = lq->second.local_queue().spec().cluster_queue();
  ClusterQueueState* cq = FindClusterQueue(cq_name);
  if (cq == nullptr) return;
  const double usage = UsesAfs(cq_name) ? AfsUsage(lq_key) : 0;
  const std::string& ns = lq->second.local_queue().metadata().namespace_();
  const std::string& name = lq->second.local_queue().metadata().name();
  for (auto it = workloads_.lower_bound(ns + "/");
       it != workloads_.end() && it->second.object().metadata().namespace_() == ns; ++it) {
    WorkloadEntry& entry = it->second;
    if (entry.object().spec().queue_name() != name || entry.queue_key.afs_usage == usage) continue;
    if (entry.where == WorkloadEntry::Where::kQueued && entry.cluster_queue == cq_name) {
      cq->pending.Rekey(&entry.queue_key, [usage](QueueKey* k) { k->afs_usage = usage; });
    } else {
      entry.queue_key.afs_usage = usage;
    }
  }
  RefreshHeads(*cq);
}

void Engine::Impl::AfsSample(const std::string& lq_key, absl::Time now) {
  const AdmissionFairSharingOptions& afs = options_.admission_fair_sharing;
  auto lq = local_queues_.find(lq_key);
  if (!afs.enabled || lq == local_queues_.end()) return;
  ArmTimer(now + afs.usage_sampling_interval, absl::StrCat(kAfsTimerPrefix, lq_key));
  // Sampled only while the LocalQueue runs and its ClusterQueue exists and is active.
  const v1::LocalQueue& object = lq->second.local_queue();
  const ClusterQueueState* cq = FindClusterQueue(object.spec().cluster_queue());
  if (!IsRunning(object.spec().stop_policy()) || cq == nullptr || !cq->active()) return;
  AfsLedger& ledger = afs_[lq_key];
  if (afs.usage_half_life <= absl::ZeroDuration()) {
    ledger.consumed.clear();
  } else if (ledger.last_update != absl::InfinitePast()) {
    Decay(&ledger.consumed, NaturalUsage(ledger.admitted),
          Alpha(std::max(absl::ZeroDuration(), now - ledger.last_update), afs.usage_half_life));
  }
  ledger.last_update = std::max(ledger.last_update, now);
  // The status: the decayed usage (penalties not included) as of now.
  v1::LocalQueue& stored = *lq->second.mutable_local_queue();
  v1::AdmissionFairSharingStatus* status = stored.mutable_status()
                                               ->mutable_fair_sharing()
                                               ->mutable_admission_fair_sharing_status();
  status->clear_consumed_resources();
  for (const auto& [resource, v] : ledger.consumed) {
    const double engine_units = resource == "cpu" ? v * 1000 : v;
    (*status->mutable_consumed_resources())[resource] =
        FormatQuantity(resource, static_cast<Amount>(std::floor(engine_units)));
  }
  *status->mutable_last_update() = ToProtoTime(now);
  EmitObject(v1::OBJECT_KIND_LOCAL_QUEUE, lq_key, &lq->second, v1::WatchEvent::MODIFIED,
             "AdmissionFairSharingSampled");
  AfsRekey(lq_key);
}

void Engine::Impl::AfsLocalQueueChanged(const std::string& lq_key, absl::Time now) {
  if (!options_.admission_fair_sharing.enabled) return;
  auto lq = local_queues_.find(lq_key);
  if (lq == local_queues_.end()) {
    // Deleted: its history goes with it; what its workloads hold still counts if it returns.
    if (auto it = afs_.find(lq_key); it != afs_.end()) {
      it->second.consumed.clear();
      it->second.penalties.clear();
      it->second.last_update = absl::InfinitePast();
    }
    return;
  }
  AfsLedger& ledger = afs_[lq_key];
  if (ledger.last_update == absl::InfinitePast()) AfsSample(lq_key, now);  // new: starts now
  AfsRekey(lq_key);  // its weight may have changed
}

void Engine::Impl::AfsRestore() {
  if (!options_.admission_fair_sharing.enabled) return;
  for (const auto& [lq_key, object] : local_queues_) {
    const v1::LocalQueueStatus& status = object.local_queue().status();
    AfsLedger& ledger = afs_[lq_key];
    absl::Time next = absl::UnixEpoch();  // never sampled: at the first tick
    if (status.fair_sharing().has_admission_fair_sharing_status()) {
      const v1::AdmissionFairSharingStatus& s = status.fair_sharing().admission_fair_sharing_status();
      for (const auto& [resource, text] : s.consumed_resources()) {
        absl::StatusOr<double> v = ParseQuantityAsDouble(text);
        if (v.ok()) ledger.consumed[resource] = *v;
      }
      ledger.last_update = FromProto(s.last_update());
      next = ledger.last_update + options_.admission_fair_sharing.usage_sampling_interval;
    }
    ArmTimer(next, absl::StrCat(kAfsTimerPrefix, lq_key));
    AfsRekey(lq_key);
  }
}

bool Engine::Impl::TickAfsTimer(const std::string& key, absl::Time now) {
  if (!absl::StartsWith(key, kAfsTimerPrefix)) return false;
  AfsSample(key.substr(sizeof(kAfsTimerPrefix) - 1), now);
  return true;
}

std::vector<LocalQueueUsage> Engine::Impl::AdmissionFairSharingUsages() const {
  std::vector<LocalQueueUsage> out;
  if (!options_.admission_fair_sharing.enabled) return out;
  for (const auto& [key, object] : local_queues_) {
    const v1::LocalQueue& lq = object.local_queue();
    out.push_back({lq.metadata().namespace_(), lq.metadata().name(), lq.spec().cluster_queue(),
                   AfsUsage(key)});
  }
  return out;
}

}  // namespace admitd::engine
