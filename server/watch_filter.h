// WatchFilter: which watch events a Watch stream wants, from its WatchRequest.
// A pure value, kept apart from the hub (and from gRPC) so the request path can
// be checked without a server.
//
//   WatchFilter filter = WatchFilter::From(request);
//   if (filter.Matches(event)) send(event);
//
// Thread safety: a WatchFilter is immutable after construction; const methods
// may be called concurrently.
#ifndef ADMITD_SERVER_WATCH_FILTER_H_
#define ADMITD_SERVER_WATCH_FILTER_H_

#include <functional>
#include <set>
#include <string>

#include "admitd/v1/admission_service.pb.h"

namespace admitd {

// Which events a watcher wants. Empty fields match everything.
struct WatchFilter {
  std::set<v1::ObjectKind> kinds;
  std::string namespace_;
  std::string cluster_queue;
  std::string cluster;  // pod directives of this cluster only
  // What the caller may read (the authorization policy's watch scope); null: everything.
  std::function<bool(const v1::WatchEvent&)> visible;

  static WatchFilter From(const v1::WatchRequest& request);
  bool Matches(const v1::WatchEvent& event) const;

 private:
  bool MatchesRequest(const v1::WatchEvent& event) const;
};

}  // namespace admitd

#endif  // ADMITD_SERVER_WATCH_FILTER_H_
