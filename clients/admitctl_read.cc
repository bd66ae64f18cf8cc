// admitctl's commands that read or watch admitd's state: get, watch, events, audit, cycles,
// directives.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "clients/admitctl_commands.h"
#include "clients/table.h"
#include "common/manifest/manifest.h"

namespace admitd::clients {
namespace {

// Events from the oldest the server's log still holds (of `ns`; every namespace when empty), the
// ones `show` takes printed by `line`, one each; then, with -w, the live ones as they happen.
int PrintEvents(Client& client, const Args& args, const std::string& ns,
                const std::function<bool(const v1::Event&)>& show,
                std::string (*line)(const v1::WatchEvent&), const char* none) {
  v1::WatchRequest req;
  req.add_kinds(v1::OBJECT_KIND_EVENT);
  req.set_from_oldest(true);
  req.set_namespace_(ns);
  const bool follow = args.Has("-w") || args.Has("--watch");
  grpc::ClientContext ctx;
  AddTrace(&ctx);
  auto reader = client.admission().Watch(&ctx, req);
  v1::WatchEvent event;
  int shown = 0;
  while (reader->Read(&event)) {
    if (event.type() == v1::WatchEvent::SYNCED) {
      if (!follow) {
        ctx.TryCancel();
        break;
      }
      continue;
    }
    if (!event.has_event() || !show(event.event())) continue;
    std::printf("%s\n", line(event).c_str());
    std::fflush(stdout);
    ++shown;
  }
  grpc::Status s = reader->Finish();
  if (!s.ok() && s.error_code() != grpc::StatusCode::CANCELLED) return Fail(s);
  if (shown == 0 && !follow) std::printf("%s\n", none);
  return 0;
}

}  // namespace

int Get(Client& client, const Args& args) {
  if (args.positional.size() < 2) return Usage("get needs a KIND");
  const v1::ObjectKind kind = KindFromName(args.positional[1]);
  if (kind == v1::OBJECT_KIND_UNSPECIFIED) return Usage("unknown kind " + args.positional[1]);
  if (kind == v1::OBJECT_KIND_EVENT) {
    Args events = args;
    events.positional.erase(events.positional.begin());
    return Events(client, events);
  }
  const std::string name = args.positional.size() > 2 ? args.positional[2] : "";
  const bool json = args.Get("-o") == "json";
  std::string ns = args.Get("-n", "default");
  if (kind == v1::OBJECT_KIND_WORKLOAD) {
    if (args.Has("-A")) ns = "";
    std::vector<v1::Workload> workloads;
    if (!name.empty()) {
      v1::GetWorkloadRequest req;
      req.set_namespace_(ns.empty() ? "default" : ns);
      req.set_name(name);
      v1::Workload wl;
      grpc::Status s = Call([&](auto* ctx) { return client.admission().Get(ctx, req, &wl); });
      if (!s.ok()) return Fail(s);
      workloads.push_back(wl);
    } else {
      v1::ListWorkloadsRequest req;
      req.set_namespace_(ns);
      req.set_page_size(1000);
      do {
        v1::ListWorkloadsResponse resp;
        grpc::Status s = Call([&](auto* ctx) { return client.admission().List(ctx, req, &resp); });
        if (!s.ok()) return Fail(s);
        for (const v1::Workload& wl : resp.workloads()) workloads.push_back(wl);
        req.set_page_token(resp.next_page_token());
      } while (!req.page_token().empty());
    }
    if (json) {
      for (const v1::Workload& wl : workloads) std::printf("%s\n", Json(wl).c_str());
    } else {
      std::printf("%s", WorkloadTable(workloads, absl::Now()).c_str());
      if (!name.empty()) std::printf("\n%s", WorkloadDetail(workloads[0]).c_str());
    }
    return 0;
  }
  std::vector<v1::QueueObject> objects;
  if (!name.empty()) {
    v1::GetObjectRequest req;
    req.set_kind(kind);
    req.set_namespace_(ns);
    req.set_name(name);
    v1::QueueObject obj;
    grpc::Status s = Call([&](auto* ctx) { return client.queues().Get(ctx, req, &obj); });
    if (!s.ok()) return Fail(s);
    objects.push_back(obj);
  } else {
    v1::ListObjectsRequest req;
    req.set_kind(kind);
    if (kind == v1::OBJECT_KIND_LOCAL_QUEUE && !args.Has("-A")) req.set_namespace_(ns);
    do {  // every page
      v1::ListObjectsResponse resp;
      grpc::Status s = Call([&](auto* ctx) { return client.queues().List(ctx, req, &resp); });
      if (!s.ok()) return Fail(s);
      objects.insert(objects.end(), resp.objects().begin(), resp.objects().end());
      req.set_page_token(resp.next_page_token());
    } while (!req.page_token().empty());
  }
  if (json) {
    for (const v1::QueueObject& o : objects) std::printf("%s\n", Json(o).c_str());
  } else {
    std::printf("%s", QueueObjectTable(kind, objects).c_str());
  }
  return 0;
}

int Watch(Client& client, const Args& args) {
  v1::WatchRequest req;
  uint64_t since = 0;
  if (args.Has("--since") && !absl::SimpleAtoi(args.Get("--since"), &since)) {
    return Usage("--since wants a revision number");
  }
  req.set_since_revision(since);
  if (args.Has("--kind")) {
    const v1::ObjectKind kind = KindFromName(args.Get("--kind"));
    if (kind == v1::OBJECT_KIND_UNSPECIFIED) return Usage("unknown kind " + args.Get("--kind"));
    req.add_kinds(kind);
  }
  req.set_namespace_(args.Get("-n"));
  grpc::ClientContext ctx;
  AddTrace(&ctx);
  auto reader = client.admission().Watch(&ctx, req);
  v1::WatchEvent event;
  while (reader->Read(&event)) {
    std::printf("%s\n", EventLine(event).c_str());
    std::fflush(stdout);
  }
  grpc::Status s = reader->Finish();
  return s.ok() ? 0 : Fail(s);
}

// The audit trail: who applied, deleted or imported what.
int Audit(Client& client, const Args& args) {
  return PrintEvents(
      client, args, "",
      [](const v1::Event& e) { return e.reporting_controller() == "admitd-audit"; }, AuditLine,
      "no audit records");
}

// Kueue's Workload events.
int Events(Client& client, const Args& args) {
  const std::string name = args.positional.size() > 1 ? args.positional[1] : "";
  return PrintEvents(
      client, args, args.Has("-A") ? "" : args.Get("-n", "default"),
      [&name](const v1::Event& e) { return name.empty() || e.regarding().name() == name; },
      EventLine, "no events");
}

int Cycles(Client& client, const Args& args) {
  v1::RunSchedulingCyclesRequest req;
  int n = 1;
  if (args.positional.size() > 1 && !absl::SimpleAtoi(args.positional[1], &n)) {
    return Usage("cycles wants a number");
  }
  req.set_count(n);
  if (args.Has("--advance")) {
    int64_t seconds;
    if (!absl::SimpleAtoi(args.Get("--advance"), &seconds)) {
      return Usage("--advance wants a number of seconds");
    }
    req.set_advance_clock_seconds(seconds);
  }
  v1::RunSchedulingCyclesResponse resp;
  grpc::Status s = Call(
      [&](auto* ctx) { return client.queues().RunSchedulingCycles(ctx, req, &resp); });
  if (!s.ok()) return Fail(s);
  std::printf("cycles: %d  heads tried: %d  admitted: %d  revision: %llu\n", resp.cycles_run(),
              resp.attempted(), resp.admitted(), static_cast<unsigned long long>(resp.revision()));
  return 0;
}

int Directives(Client& client, const Args& args) {
  if (!args.Has("--cluster")) return Usage("directives wants --cluster NAME");
  v1::ListDirectivesRequest req;
  req.set_cluster(args.Get("--cluster"));
  v1::ListDirectivesResponse resp;
  grpc::Status s = Call([&](auto* ctx) { return client.pods().ListDirectives(ctx, req, &resp); });
  if (!s.ok()) return Fail(s);
  if (resp.directives().empty()) {
    std::printf("nothing outstanding for cluster %s (revision %llu)\n", req.cluster().c_str(),
                static_cast<unsigned long long>(resp.revision()));
    return 0;
  }
  for (const v1::PodDirective& d : resp.directives()) {
    std::string detail;
    if (!d.termination_reason().empty()) detail = " " + d.termination_reason();
    for (const auto& [k, v] : d.node_selector()) detail += " " + k + "=" + v;
    std::printf("%-16s %s/%s%s\n", v1::PodDirective::Action_Name(d.action()).c_str(),
                d.pod().namespace_().c_str(), d.pod().name().c_str(), detail.c_str());
  }
  return 0;
}

}  // namespace admitd::clients
