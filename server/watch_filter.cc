#include "server/watch_filter.h"

namespace admitd {

WatchFilter WatchFilter::From(const v1::WatchRequest& request) {
  WatchFilter filter;
  for (int kind : request.kinds()) filter.kinds.insert(static_cast<v1::ObjectKind>(kind));
  filter.namespace_ = request.namespace_();
  filter.cluster_queue = request.cluster_queue();
  filter.cluster = request.cluster();
  return filter;
}

bool WatchFilter::Matches(const v1::WatchEvent& event) const {
  if (event.type() == v1::WatchEvent::SYNCED) return true;
  return MatchesRequest(event) && (!visible || visible(event));
}

bool WatchFilter::MatchesRequest(const v1::WatchEvent& event) const {
  if (event.has_directive()) {
    // Only to a watch that asks for directives, and then of its cluster.
    if (kinds.count(v1::OBJECT_KIND_POD_DIRECTIVE) == 0) return false;
    if (!cluster.empty() && event.directive().pod().cluster() != cluster) return false;
    return namespace_.empty() || event.directive().pod().namespace_() == namespace_;
  }
  if (event.has_event()) {
    // Events too go only to a watch that names their kind; filters select by their Workload.
    const v1::Event& e = event.event();
    if (kinds.count(v1::OBJECT_KIND_EVENT) == 0) return false;
    if (!cluster.empty() && e.cluster() != cluster) return false;
    if (!namespace_.empty() && e.regarding().namespace_() != namespace_) return false;
    return cluster_queue.empty() || e.cluster_queue() == cluster_queue;
  }
  if (!cluster.empty()) return false;  // a cluster's watch gets its directives (and events) only
  if (!kinds.empty() && kinds.count(event.kind()) == 0) return false;
  if (!namespace_.empty()) {
    const v1::ObjectMeta* meta = nullptr;
    if (event.has_workload()) {
      meta = &event.workload().metadata();
    } else if (event.queue_object().has_local_queue()) {
      meta = &event.queue_object().local_queue().metadata();
    }
    if (meta == nullptr || meta->namespace_() != namespace_) return false;
  }
  if (!cluster_queue.empty()) {
    if (event.has_workload()) {
      if (event.workload().status().admission().cluster_queue() != cluster_queue) return false;
    } else if (event.queue_object().has_cluster_queue()) {
      if (event.queue_object().cluster_queue().metadata().name() != cluster_queue) return false;
    } else if (event.queue_object().has_local_queue()) {
      if (event.queue_object().local_queue().spec().cluster_queue() != cluster_queue) return false;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace admitd
