// Engine: the status of ClusterQueues, Cohorts and LocalQueues, computed on read from the queues
// and the workloads they hold (pending, reserving and admitted counts, usage per flavor, Active,
// the weighted share while fair sharing is on).
#include <algorithm>
#include <string>
#include <utility>

#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/engine/quantity.h"

namespace admitd::engine {
namespace {

// Usage per flavor and resource as Kueue's status shows it: every quota entry, used or not, in
// the ClusterQueue's order of resource groups, flavors and covered resources.
void AddUsage(google::protobuf::RepeatedPtrField<v1::FlavorUsage>* out,
              const FlavorResourceAmounts& usage, const ClusterQueueState& cq) {
  for (const ResourceGroupQuota& group : cq.groups) {
    for (const std::string& flavor : group.flavors) {
      v1::FlavorUsage* fu = out->Add();
      fu->set_name(flavor);
      for (const std::string& resource : group.resources) {
        const FlavorResource fr{flavor, resource};
        auto u = usage.find(fr);
        const Amount used = u == usage.end() ? 0 : u->second;
        auto q = cq.nominal.find(fr);
        const int64_t quota = q == cq.nominal.end() ? 0 : q->second;
        v1::ResourceUsage* ru = fu->add_resources();
        ru->set_name(resource);
        ru->set_total(FormatQuantity(resource, used));
        ru->set_borrowed(FormatQuantity(resource, std::max<Amount>(0, used - quota)));
      }
    }
  }
}

}  // namespace

v1::ClusterQueue Engine::Impl::WithStatus(const ClusterQueueState& cq) const {
  v1::ClusterQueue out = cq.spec_object();
  v1::ClusterQueueStatus* status = out.mutable_status();
  AddUsage(status->mutable_flavors_reservation(), cq.usage, cq);
  AddUsage(status->mutable_flavors_usage(), cq.usage, cq);
  status->set_pending_workloads(
      static_cast<int32_t>(cq.pending.active() + cq.pending.inadmissible() +
                           cq.backing_off.size()));
  status->set_pending_active_workloads(static_cast<int32_t>(cq.pending.active()));
  status->set_pending_inadmissible_workloads(
      static_cast<int32_t>(cq.pending.inadmissible() + cq.backing_off.size()));
  status->set_reserving_workloads(cq.reserving);
  status->set_admitted_workloads(cq.admitted);
  if (options_.fair_sharing) {
    status->mutable_fair_sharing()->set_weighted_share(
        quota_tree_.ShareOf(cq.name(), /*cohort=*/false).Weighted());
  }
  v1::Condition* active = status->add_conditions();
  active->set_type("Active");
  if (cq.active()) {
    active->set_status("True");
    active->set_reason("Ready");
    active->set_message("Can admit new workloads");
  } else {
    active->set_status("False");
    active->set_reason(cq.inactive_reason);
    active->set_message(cq.inactive_message);
  }
  return out;
}

v1::Cohort Engine::Impl::WithStatus(const v1::Cohort& cohort) const {
  v1::Cohort out = cohort;
  out.clear_status();
  if (options_.fair_sharing) {
    out.mutable_status()->mutable_fair_sharing()->set_weighted_share(
        quota_tree_.ShareOf(cohort.metadata().name(), /*cohort=*/true).Weighted());
  }
  return out;
}

std::vector<NodeShare> Engine::Impl::WeightedShares() const {
  std::vector<NodeShare> out;
  if (!options_.fair_sharing) return out;
  for (const auto& [name, cq] : cluster_queues_) {
    out.push_back({false, name, cq.spec_object().spec().cohort_name(),
                   quota_tree_.ShareOf(name, /*cohort=*/false).Precise()});
  }
  for (const std::string& name : quota_tree_.CohortNames()) {
    out.push_back({true, name, "", quota_tree_.ShareOf(name, /*cohort=*/true).Precise()});
  }
  return out;
}

v1::LocalQueue Engine::Impl::WithStatus(const v1::LocalQueue& lq) const {
  v1::LocalQueue out = lq;
  int pending = 0, reserving = 0, admitted = 0, active = 0, inadmissible = 0;
  FlavorResourceAmounts reserved, used;  // by reserving and by admitted workloads
  for (auto it = workloads_.lower_bound(lq.metadata().namespace_() + "/");
       it != workloads_.end() &&
       it->second.object().metadata().namespace_() == lq.metadata().namespace_();
       ++it) {
    if (it->second.object().spec().queue_name() != lq.metadata().name()) continue;
    switch (it->second.where) {
      case WorkloadEntry::Where::kQueued:
        ++(ActivePending(it->second) ? active : inadmissible);
        break;
      case WorkloadEntry::Where::kBackoff: ++inadmissible; break;
      default: break;
    }
    if (HoldsReservation(it->second.object())) {
      AddTo(&reserved, it->second.usage(), +1);
      if (IsConditionTrue(it->second.object(), kAdmitted)) AddTo(&used, it->second.usage(), +1);
    }
    switch (StateOf(it->second.object())) {
      case v1::WORKLOAD_STATE_PENDING: ++pending; break;
      case v1::WORKLOAD_STATE_QUOTA_RESERVED: ++reserving; break;
      case v1::WORKLOAD_STATE_ADMITTED:
      case v1::WORKLOAD_STATE_EVICTED:
        ++reserving;
        ++admitted;
        break;
      default: break;
    }
  }
  out.mutable_status()->set_pending_workloads(pending);
  out.mutable_status()->set_pending_active_workloads(active);
  out.mutable_status()->set_pending_inadmissible_workloads(inadmissible);
  out.mutable_status()->set_reserving_workloads(reserving);
  out.mutable_status()->set_admitted_workloads(admitted);
  // Usage per flavor in the ClusterQueue's order, as Kueue's LocalQueue status lists it (no
  // `borrowed`: borrowing is the ClusterQueue's business).
  if (auto cq = cluster_queues_.find(lq.spec().cluster_queue()); cq != cluster_queues_.end()) {
    for (auto [target, usage] : {std::pair{out.mutable_status()->mutable_flavors_reservation(), &reserved},
                                 std::pair{out.mutable_status()->mutable_flavors_usage(), &used}}) {
      for (const ResourceGroupQuota& group : cq->second.groups) {
        for (const std::string& flavor : group.flavors) {
          v1::FlavorUsage* fu = target->Add();
          fu->set_name(flavor);
          for (const std::string& resource : group.resources) {
            auto u = usage->find({flavor, resource});
            v1::ResourceUsage* ru = fu->add_resources();
            ru->set_name(resource);
            ru->set_total(FormatQuantity(resource, u == usage->end() ? 0 : u->second));
          }
        }
      }
    }
  }
  return out;
}

}  // namespace admitd::engine
