// admitctl: the command line for admitd. `admitctl help` lists the commands.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "clients/client.h"
#include "common/connection.h"
#include "common/trace/trace_context.h"
#include "common/manifest/manifest.h"
#include "clients/admitctl_flags.h"
#include "clients/table.h"
#include "google/protobuf/util/json_util.h"

namespace admitd::clients {
namespace {

using manifest::Manifest;
using manifest::ReadManifests;
using manifest::SortForApply;

// The trace this command's calls belong to (a traceparent sent with each); unset: none.
std::optional<tracing::SpanContext> g_trace;

// Sends the command's traceparent with a call, when it has one.
void AddTrace(grpc::ClientContext* ctx) {
  if (g_trace) ctx->AddMetadata("traceparent", tracing::FormatTraceparent(*g_trace));
}

int Usage(std::string problem) {
  constexpr absl::string_view kSeeHelp = " (see --help)";  // said on the next line
  if (absl::EndsWith(problem, kSeeHelp)) problem.resize(problem.size() - kSeeHelp.size());
  std::fprintf(stderr, "admitctl: %s\nSee 'admitctl --help' for usage.\n", problem.c_str());
  return 2;
}

int Fail(const grpc::Status& status) {
  std::fprintf(stderr, "admitctl: %s\n", DescribeError(status).c_str());
  return 1;
}

// Runs one unary call (`call(context)`) within `timeout`, carrying the command's trace; a call
// the server refused without running it (overloaded, shutting down) is retried after the delay
// the server advises.
grpc::Status Call(const std::function<grpc::Status(grpc::ClientContext*)>& call,
                  absl::Duration timeout = absl::Seconds(30)) {
  RetryOptions retry;
  retry.timeout = timeout;
  retry.prepare = AddTrace;
  return CallWithRetry(call, retry);
}

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  return out;
}

int Submit(Client& client, const v1::Workload& wl, const std::string& source) {
  v1::SubmitRequest req;
  *req.mutable_workload() = wl;
  v1::SubmitResponse resp;
  grpc::Status s = Call([&](auto* ctx) { return client.admission().Submit(ctx, req, &resp); });
  if (!s.ok()) {
    std::fprintf(stderr, "admitctl: %s:\n  %s\n", source.c_str(), DescribeError(s).c_str());
    return 1;
  }
  const v1::Workload& got = resp.workload();
  std::printf("workload/%s %s (%s)\n", got.metadata().name().c_str(),
              resp.created() ? "submitted" : "unchanged", StateName(got).c_str());
  return 0;
}

int Apply(Client& client, const Args& args) {
  if (!args.Has("-f")) return Usage("apply needs -f FILE");
  std::vector<Manifest> all;
  for (const std::string& path : args.flags.at("-f")) {
    auto parsed = ReadManifests(path);
    if (!parsed.ok()) {
      std::fprintf(stderr, "admitctl: %s\n", std::string(parsed.status().message()).c_str());
      return 2;
    }
    for (Manifest& m : *parsed) all.push_back(std::move(m));
  }
  SortForApply(&all);
  int rc = 0;
  for (const Manifest& m : all) {
    if (m.is_workload) {
      rc = std::max(rc, Submit(client, m.workload, m.source));
      continue;
    }
    v1::ApplyRequest req;
    *req.mutable_object() = m.object;
    v1::ApplyResponse resp;
    grpc::Status s = Call([&](auto* ctx) { return client.queues().Apply(ctx, req, &resp); });
    if (!s.ok()) {
      std::fprintf(stderr, "admitctl: %s:\n  %s\n", m.source.c_str(), DescribeError(s).c_str());
      rc = 1;
      continue;
    }
    std::printf("%s/%s %s\n", absl::AsciiStrToLower(m.kind).c_str(),
                ObjectName(resp.object()).c_str(),
                resp.created() ? "created" : resp.unchanged() ? "unchanged" : "configured");
  }
  return rc;
}

int SubmitFiles(Client& client, const Args& args) {
  if (!args.Has("-f")) return Usage("submit needs -f FILE");
  int rc = 0;
  for (const std::string& path : args.flags.at("-f")) {
    auto parsed = ReadManifests(path);
    if (!parsed.ok()) {
      std::fprintf(stderr, "admitctl: %s\n", std::string(parsed.status().message()).c_str());
      return 2;
    }
    for (const Manifest& m : *parsed) {
      if (!m.is_workload) {
        std::fprintf(stderr, "admitctl: %s: not a Workload (use apply)\n", m.source.c_str());
        rc = 2;
        continue;
      }
      rc = std::max(rc, Submit(client, m.workload, m.source));
    }
  }
  return rc;
}

int Import(Client& client, const Args& args) {
  if (!args.Has("-f")) return Usage("import needs -f FILE");
  v1::ImportRequest req;
  req.set_cluster(args.Get("--cluster"));
  for (const std::string& path : args.flags.at("-f")) {
    auto parsed = ReadManifests(path);
    if (!parsed.ok()) {
      std::fprintf(stderr, "admitctl: %s\n", std::string(parsed.status().message()).c_str());
      return 2;
    }
    for (const Manifest& m : *parsed) {
      if (!m.is_workload) {
        std::fprintf(stderr, "admitctl: %s: not a Workload (use apply)\n", m.source.c_str());
        return 2;
      }
      *req.add_workloads() = m.workload;
    }
  }
  v1::ImportResponse resp;
  grpc::Status s = Call([&](auto* ctx) { return client.queues().Import(ctx, req, &resp); });
  if (!s.ok()) return Fail(s);
  std::printf("imported %d workload(s), %d already present\n", resp.imported(), resp.unchanged());
  return 0;
}

int Events(Client& client, const Args& args);

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

int Delete(Client& client, const Args& args) {
  if (args.positional.size() < 3) return Usage("delete needs KIND NAME");
  const v1::ObjectKind kind = KindFromName(args.positional[1]);
  if (kind == v1::OBJECT_KIND_UNSPECIFIED) return Usage("unknown kind " + args.positional[1]);
  const std::string ns = args.Get("-n", "default");
  grpc::Status s;
  if (kind == v1::OBJECT_KIND_WORKLOAD) {
    v1::DeleteWorkloadRequest req;
    req.set_namespace_(ns);
    req.set_name(args.positional[2]);
    v1::DeleteWorkloadResponse resp;
    s = Call([&](auto* ctx) { return client.admission().Delete(ctx, req, &resp); });
  } else {
    v1::DeleteObjectRequest req;
    req.set_kind(kind);
    req.set_namespace_(ns);
    req.set_name(args.positional[2]);
    v1::DeleteObjectResponse resp;
    s = Call([&](auto* ctx) { return client.queues().Delete(ctx, req, &resp); });
  }
  if (!s.ok()) return Fail(s);
  std::printf("%s/%s deleted\n", args.positional[1].c_str(), args.positional[2].c_str());
  return 0;
}

int Admit(Client& client, const Args& args, bool explain) {
  if (args.positional.size() < 2) return Usage("needs a workload NAME");
  v1::AdmitRequest req;
  req.set_namespace_(args.Get("-n", "default"));
  req.set_name(args.positional[1]);
  req.set_dry_run(explain);
  absl::Duration timeout = absl::Seconds(30);
  if (args.Has("--timeout") && !absl::ParseDuration(args.Get("--timeout"), &timeout)) {
    return Usage("--timeout wants a duration such as 30s");
  }
  if (args.Has("--wait") && !explain) {
    req.set_wait(true);
    req.mutable_timeout()->set_seconds(absl::ToInt64Seconds(timeout));
  }
  v1::AdmitResponse resp;
  grpc::Status s = Call([&](auto* ctx) { return client.admission().Admit(ctx, req, &resp); },
                        timeout + absl::Seconds(5));
  if (!s.ok()) return Fail(s);
  std::printf("%s", AdmitReport(resp).c_str());
  return 0;
}

int Release(Client& client, const Args& args) {
  if (args.positional.size() < 2) return Usage("release needs a workload NAME");
  v1::ReleaseQuotaRequest req;
  req.set_namespace_(args.Get("-n", "default"));
  req.set_name(args.positional[1]);
  if (args.Has("--finished")) {
    const std::string how = args.Get("--finished", "succeeded");
    if (how != "succeeded" && how != "failed") return Usage("--finished=succeeded|failed");
    req.mutable_finished()->set_succeeded(how == "succeeded");
  } else if (args.Has("--stopped")) {
    req.mutable_stopped();
  } else if (args.Has("--reclaimable")) {
    for (absl::string_view item : absl::StrSplit(args.Get("--reclaimable"), ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
      int count;
      if (!absl::SimpleAtoi(kv.second, &count)) return Usage("--reclaimable PODSET=N,...");
      auto* pod = req.mutable_reclaimable()->add_pods();
      pod->set_name(kv.first);
      pod->set_count(count);
    }
  } else {
    return Usage("release needs --finished, --stopped or --reclaimable");
  }
  v1::ReleaseQuotaResponse resp;
  grpc::Status s = Call(
      [&](auto* ctx) { return client.admission().ReleaseQuota(ctx, req, &resp); });
  if (!s.ok()) return Fail(s);
  std::printf("workload/%s %s\n", args.positional[1].c_str(), StateName(resp.workload()).c_str());
  return 0;
}

int Resize(Client& client, const Args& args) {
  v1::ResizeRequest req;
  req.set_namespace_(args.Get("-n", "default"));
  if (args.Has("--job-uid")) {
    if (args.positional.size() > 1) return Usage("resize takes a workload NAME or --job-uid");
    v1::JobReference* job = req.mutable_job();
    job->set_uid(args.Get("--job-uid"));
    job->set_kind(args.Get("--job-kind", "Job"));
    job->set_name(args.Get("--job-name"));
    job->set_api_version(args.Get("--job-api-version", "batch/v1"));
  } else if (args.positional.size() == 2) {
    req.set_name(args.positional[1]);
  } else {
    return Usage("resize needs a workload NAME or --job-uid");
  }
  if (!args.Has("--count")) return Usage("resize needs --count PODSET=N");
  for (const std::string& item : args.flags.at("--count")) {
    for (absl::string_view one : absl::StrSplit(item, ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv = absl::StrSplit(one, absl::MaxSplits('=', 1));
      int count;
      if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &count)) {
        return Usage("--count wants PODSET=N");
      }
      v1::PodSetCount* ps = req.add_pod_sets();
      ps->set_name(kv.first);
      ps->set_count(count);
    }
  }
  if (args.Has("--generation")) {
    int64_t generation;
    if (!absl::SimpleAtoi(args.Get("--generation"), &generation)) {
      return Usage("--generation wants a number");
    }
    req.set_generation(generation);
  }
  v1::ResizeResponse resp;
  grpc::Status s = Call([&](auto* ctx) { return client.admission().Resize(ctx, req, &resp); });
  if (!s.ok()) return Fail(s);
  std::printf("%s", ResizeReport(resp).c_str());
  return 0;
}

int SetActive(Client& client, const Args& args, bool active) {
  if (args.positional.size() < 2) {
    return Usage(std::string(active ? "activate" : "deactivate") + " needs a workload NAME");
  }
  v1::SetActiveRequest req;
  req.set_namespace_(args.Get("-n", "default"));
  req.set_name(args.positional[1]);
  req.set_active(active);
  v1::SetActiveResponse resp;
  grpc::Status s = Call([&](auto* ctx) { return client.admission().SetActive(ctx, req, &resp); });
  if (!s.ok()) return Fail(s);
  std::printf("workload/%s %s\n", args.positional[1].c_str(), StateName(resp.workload()).c_str());
  return 0;
}

int Check(Client& client, const Args& args) {
  if (args.positional.size() < 4) return Usage("check needs NAME CHECK STATE");
  v1::SetAdmissionCheckStateRequest req;
  req.set_namespace_(args.Get("-n", "default"));
  req.set_name(args.positional[1]);
  req.set_check(args.positional[2]);
  req.set_state(args.positional[3]);
  req.set_message(args.Get("--message"));
  if (args.Has("--requeue-after")) {
    int seconds;
    if (!absl::SimpleAtoi(args.Get("--requeue-after"), &seconds)) {
      return Usage("--requeue-after wants a number of seconds");
    }
    req.set_requeue_after_seconds(seconds);
  }
  v1::SetAdmissionCheckStateResponse resp;
  grpc::Status s = Call(
      [&](auto* ctx) { return client.admission().SetAdmissionCheckState(ctx, req, &resp); });
  if (!s.ok()) return Fail(s);
  std::printf("workload/%s %s\n", args.positional[1].c_str(), StateName(resp.workload()).c_str());
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

int Run(int argc, char** argv) {
  absl::StatusOr<Args> parsed = ParseArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) return Usage(std::string(parsed.status().message()));
  const Args& args = *parsed;
  if (args.positional.empty() || args.positional[0] == "help" || args.help) {
    std::printf("%s", AdmitctlUsage().c_str());
    return args.positional.empty() && !args.help ? 2 : 0;
  }
  const std::string cmd = args.positional[0];
  const std::vector<CommandHelp>& commands = AdmitctlCommands();
  if (std::none_of(commands.begin(), commands.end(),
                   [&](const CommandHelp& c) { return c.name == cmd; })) {
    return Usage(UnknownCommand(cmd));
  }
  if (cmd == "version") {
    std::printf("admitctl 0.1.0 (API admitd.v1)\n");
    return 0;
  }
  if (const char* parent = std::getenv("TRACEPARENT"); parent != nullptr && *parent != '\0') {
    g_trace = tracing::ParseTraceparent(parent);
    if (!g_trace) return Usage(absl::StrCat("$TRACEPARENT \"", parent, "\" is not a W3C traceparent"));
    g_trace->span_id = tracing::NewSpanId();  // this command, a child of the given span
  } else if (args.Has("--trace")) {
    g_trace = tracing::SpanContext{tracing::NewTraceId(), tracing::NewSpanId(), true, "", false};
  }
  if (g_trace && args.Has("--trace")) {
    std::fprintf(stderr, "trace %s\n", tracing::Hex(g_trace->trace_id).c_str());
  }
  const char* env = std::getenv("ADMITD_SERVER");
  ConnectionOptions connection =
      ConnectionOptionsFromEnvironment(args.Get("--server", env != nullptr ? env : "localhost:50051"));
  connection.tls = args.Has("--tls");
  connection.ca_file = args.Get("--ca-file", connection.ca_file);
  connection.cert_file = args.Get("--cert-file", connection.cert_file);
  connection.key_file = args.Get("--key-file", connection.key_file);
  connection.server_name = args.Get("--server-name");
  if (args.Has("--token-file")) {
    connection.token_file = args.Get("--token-file");
    connection.token.clear();
  }
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = Connect(connection);
  if (!channel.ok()) return Usage(std::string(channel.status().message()));
  Client client(*std::move(channel));
  if (cmd == "apply") return Apply(client, args);
  if (cmd == "submit") return SubmitFiles(client, args);
  if (cmd == "import") return Import(client, args);
  if (cmd == "get") return Get(client, args);
  if (cmd == "delete") return Delete(client, args);
  if (cmd == "admit") return Admit(client, args, /*explain=*/false);
  if (cmd == "explain") return Admit(client, args, /*explain=*/true);
  if (cmd == "release") return Release(client, args);
  if (cmd == "watch") return Watch(client, args);
  if (cmd == "events") return Events(client, args);
  if (cmd == "audit") return Audit(client, args);
  if (cmd == "cycles") return Cycles(client, args);
  if (cmd == "deactivate") return SetActive(client, args, false);
  if (cmd == "activate") return SetActive(client, args, true);
  if (cmd == "check") return Check(client, args);
  if (cmd == "resize") return Resize(client, args);
  if (cmd == "directives") return Directives(client, args);
  return Usage(absl::StrCat("command ", cmd, " is listed but not handled"));
}

}  // namespace
}  // namespace admitd::clients

int main(int argc, char** argv) { return admitd::clients::Run(argc, argv); }
