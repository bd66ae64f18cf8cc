// admitctl's commands that change admitd's state: apply, submit, import, delete, admit and
// explain, release, resize, activate and deactivate, check.
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
#include "common/connection.h"
#include "common/manifest/manifest.h"

namespace admitd::clients {
namespace {

using manifest::Manifest;
using manifest::ReadManifests;
using manifest::SortForApply;

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

// Every manifest of every -f, in order; nullopt (the error printed) when one cannot be read.
std::optional<std::vector<Manifest>> ReadAllManifests(const Args& args) {
  std::vector<Manifest> all;
  for (const std::string& path : args.flags.at("-f")) {
    auto parsed = ReadManifests(path);
    if (!parsed.ok()) {
      std::fprintf(stderr, "admitctl: %s\n", std::string(parsed.status().message()).c_str());
      return std::nullopt;
    }
    for (Manifest& m : *parsed) all.push_back(std::move(m));
  }
  return all;
}

}  // namespace

int Apply(Client& client, const Args& args) {
  if (!args.Has("-f")) return Usage("apply needs -f FILE");
  std::optional<std::vector<Manifest>> all = ReadAllManifests(args);
  if (!all) return 2;
  SortForApply(&*all);
  int rc = 0;
  for (const Manifest& m : *all) {
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
  std::optional<std::vector<Manifest>> all = ReadAllManifests(args);
  if (!all) return 2;
  for (const Manifest& m : *all) {
    if (!m.is_workload) {
      std::fprintf(stderr, "admitctl: %s: not a Workload (use apply)\n", m.source.c_str());
      return 2;
    }
    *req.add_workloads() = m.workload;
  }
  v1::ImportResponse resp;
  grpc::Status s = Call([&](auto* ctx) { return client.queues().Import(ctx, req, &resp); });
  if (!s.ok()) return Fail(s);
  std::printf("imported %d workload(s), %d already present\n", resp.imported(), resp.unchanged());
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

}  // namespace admitd::clients
