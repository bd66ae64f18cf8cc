// Dispatcher::Reconcile: every decision about one workload, taken again from the manager's and
// the workers' current state (docs/multikueue.md, multikueue.md §5).
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "server/metrics.h"
#include "server/multikueue/copy_rules.h"
#include "server/multikueue/dispatcher.h"

namespace admitd::multikueue {

using namespace rules;  // NOLINT

void Dispatcher::Reconcile(const std::string& key, absl::Time now) {
  {
    absl::MutexLock lock(&mu_);
    if (writing_.count(key) > 0) return;  // looked at again once the write is answered
  }
  auto local = local_.workloads.find(key);
  const v1::Workload* wl = local == local_.workloads.end() ? nullptr : &local->second;
  const std::string check = wl == nullptr ? "" : CheckOf(*wl);
  const v1::AdmissionCheckState* state = check.empty() ? nullptr : CheckState(*wl, check);
  // The copies of this workload in every worker, connected or not (a disconnected worker's
  // copy is its last known state).
  std::map<std::string, v1::Workload> copies;
  for (auto& [name, link] : links_) {
    if (std::optional<v1::Workload> c = link->Copy(key); c.has_value()) copies[name] = *c;
  }
  auto withdraw_all = [&]() {
    for (const auto& [cluster, copy] : copies) {
      WorkerLink* link = LinkOf(cluster);
      if (link == nullptr || !link->connected()) continue;
      // An elastic slice being replaced on the worker stays until its replacement took over
      // there (Kueue keeps a replaced slice's remote objects, multikueue.md §15).
      if (IsElastic(copy) && !IsTrue(copy, "Finished") && HasReplacement(*link, key)) continue;
      DeleteCopy(*link, copy);
    }
  };
  // Gone, finished, without a reservation or without a MultiKueue check: no copy is kept.
  if (wl == nullptr || state == nullptr || !HoldsReservation(*wl)) {
    withdraw_all();
    return;
  }
  if (state->state() == "Rejected") return;
  const engine::DispatchTarget target{wl->metadata().namespace_(), wl->metadata().name(),
                                      wl->metadata().uid(), check};
  const std::string reservation = ReservationId(*wl);

  // A job MultiKueue cannot run in a worker is rejected before any copy is made.
  if (state->state() == "Pending" && wl->status().cluster_name().empty()) {
    if (std::optional<std::string> why = RejectionOf(*wl); why.has_value()) {
      const std::string message = absl::StrCat(*why, ", Previously: \"Pending\"");
      Write(key, [target, message](engine::Engine& engine, absl::Time at) {
        v1::SetAdmissionCheckStateRequest req;
        req.set_namespace_(target.ns);
        req.set_name(target.name);
        req.set_check(target.check);
        req.set_state("Rejected");
        req.set_message(message);
        return engine.SetAdmissionCheckState(req, at).status();
      });
      return;
    }
  }

  // The admitting worker's job status comes back first, whatever happens next (an eviction
  // must show the job inactive here; a finish must show its last status).
  if (auto winner = copies.find(wl->status().cluster_name());
      winner != copies.end() && !winner->second.remote_job().status().empty() &&
      winner->second.remote_job().status() != wl->remote_job().status() &&
      ReservationId(*wl) == AnnotationOf(winner->second, kReservationAnnotation)) {
    const std::string uid = wl->metadata().uid(), status = winner->second.remote_job().status();
    Write(key, [target, uid, status](engine::Engine& engine, absl::Time at) {
      v1::UpdateRemoteJobRequest req;
      req.set_namespace_(target.ns);
      req.set_name(target.name);
      req.set_uid(uid);
      req.set_status(status);
      return engine.UpdateRemoteJob(req, at).status();
    });
    return;
  }

  // Evicted here (preemption, deactivation, a Retry): the copy that runs is deactivated; once no
  // worker runs it the quota goes back (and the copies go with the reservation).
  if (IsTrue(*wl, "Evicted")) {
    bool running = false;
    for (const auto& [cluster, copy] : copies) {
      if (!IsTrue(copy, "Admitted") || IsTrue(copy, "Finished")) continue;
      WorkerLink* link = LinkOf(cluster);
      if (link != nullptr && link->connected()) {
        running = true;
        const bool active = !copy.spec().has_active() || copy.spec().active();
        if (active) link->Deactivate(copy.metadata().namespace_(), copy.metadata().name(),
                                     copy.metadata().uid());
      } else {
        // An unreachable worker may still run it: its grace runs out first.
        const absl::Time until = LostSince(cluster, now) + options_.worker_lost_timeout;
        if (until > now) {
          running = true;
          WakeAt(until, key);
        }
      }
    }
    if (!running) {
      const std::string uid = wl->metadata().uid();
      Write(key, [target, uid](engine::Engine& engine, absl::Time at) {
        v1::ReleaseQuotaRequest req;
        req.set_namespace_(target.ns);
        req.set_name(target.name);
        req.set_uid(uid);
        req.mutable_stopped();
        return engine.ReleaseQuota(req, at).status();
      });
    }
    return;
  }

  // Copies of an earlier reservation are stale: withdrawn, never adopted.
  for (auto it = copies.begin(); it != copies.end();) {
    auto a = it->second.metadata().annotations().find(kReservationAnnotation);
    if (a == it->second.metadata().annotations().end() || a->second != reservation) {
      WorkerLink* link = LinkOf(it->first);
      if (link != nullptr && link->connected()) DeleteCopy(*link, it->second);
      it = copies.erase(it);
    } else {
      ++it;
    }
  }

  const std::string& cluster_name = wl->status().cluster_name();
  if (state->state() == "Ready" && !cluster_name.empty()) {
    auto winner = copies.find(cluster_name);
    WorkerLink* link = LinkOf(cluster_name);
    const bool reachable = link != nullptr && link->connected();
    if (winner != copies.end() && IsTrue(winner->second, "Finished") && !IsElastic(*wl) &&
        FindCondition(winner->second, "Finished")->reason() == "OutOfSync") {
      // The worker's job no longer matches its copy: dispatched again, never finished here.
      const std::string message = absl::StrCat(
          "Remote workload on worker cluster \"", cluster_name,
          "\" is out of sync with its user job, resetting for re-dispatch, Previously: \"Ready\"");
      Write(key, [target, message](engine::Engine& engine, absl::Time at) {
        return engine.RetryDispatch(target, message, engine::DispatchEvent::kWarning, at).status();
      });
      return;
    }
    if (winner != copies.end() && IsTrue(winner->second, "Finished")) {
      const v1::Condition* f = FindCondition(winner->second, "Finished");
      const std::string reason = f->reason(), message = f->message();
      const std::string uid = wl->metadata().uid();
      Write(key, [target, uid, reason, message](engine::Engine& engine, absl::Time at) {
        v1::ReleaseQuotaRequest req;
        req.set_namespace_(target.ns);
        req.set_name(target.name);
        req.set_uid(uid);
        req.mutable_finished()->set_succeeded(reason == "Succeeded");
        if (reason != "Succeeded" && reason != "Failed") req.mutable_finished()->set_reason(reason);
        req.mutable_finished()->set_message(message);
        return engine.ReleaseQuota(req, at).status();
      });
      return;
    }
    if (winner != copies.end() && IsTrue(winner->second, "Evicted")) {
      const std::string message =
          absl::StrCat("Workload evicted on worker cluster: \"", cluster_name,
                       "\", resetting for re-admission. Previously: \"Ready\"");
      Write(key, [target, message](engine::Engine& engine, absl::Time at) {
        return engine.RetryDispatch(target, message, engine::DispatchEvent::kNormal, at).status();
      });
      return;
    }
    if (!reachable) {
      const absl::Time until = LostSince(cluster_name, now) + options_.worker_lost_timeout;
      if (until > now) {
        WakeAt(until, key);  // within the grace: nothing changes
        return;
      }
      Write(key, [target](engine::Engine& engine, absl::Time at) {
        return engine.RetryDispatch(target, "Admitting remote lost, Previously: \"Ready\"",
                                    engine::DispatchEvent::kNone, at)
            .status();
      });
      return;
    }
    if (winner == copies.end() || !IsTrue(winner->second, "Admitted")) {
      Write(key, [target](engine::Engine& engine, absl::Time at) {
        return engine
            .RetryDispatch(target, "Admitting remote no longer exists, Previously: \"Ready\"",
                           engine::DispatchEvent::kNone, at)
            .status();
      });
      return;
    }
    // The winner runs: every other copy goes, and the winner gets the job to create.
    for (const auto& [cluster, copy] : copies) {
      if (cluster == cluster_name) continue;
      if (WorkerLink* l = LinkOf(cluster); l != nullptr && l->connected()) DeleteCopy(*l, copy);
    }
    const v1::Workload& copy = winner->second;
    if (IsElastic(*wl) && ScaledDown(*wl, copy)) {
      link->ScaleDown(copy.metadata().namespace_(), copy.metadata().name(), wl->spec().pod_sets());
    }
    if (!wl->remote_job().manifest().empty() &&
        copy.remote_job().manifest() != wl->remote_job().manifest()) {
      link->HandOverJob(copy.metadata().namespace_(), copy.metadata().name(),
                        copy.metadata().uid(), wl->remote_job().manifest());
    }
    return;
  }
  if (state->state() == "Ready") {
    Write(key, [target](engine::Engine& engine, absl::Time at) {
      return engine
          .RetryDispatch(target,
                         "Admission check is Ready but no admitting cluster is recorded; this is "
                         "unexpected, please report it, Previously: \"Ready\"",
                         engine::DispatchEvent::kNone, at)
          .status();
    });
    return;
  }
  if (state->state() != "Pending") return;  // Retry: the eviction is on its way

  // First admitted wins: the earliest Admitted transition among the copies of this reservation.
  const v1::Workload* winner = nullptr;
  std::string winner_cluster;
  for (const auto& [cluster, copy] : copies) {
    WorkerLink* link = LinkOf(cluster);
    if (link == nullptr || !link->connected() || !IsTrue(copy, "Admitted") ||
        IsTrue(copy, "Finished") || IsTrue(copy, "Evicted")) {
      continue;
    }
    if (winner == nullptr || TimeOf(FindCondition(copy, "Admitted")->last_transition_time()) <
                                 TimeOf(FindCondition(*winner, "Admitted")->last_transition_time())) {
      winner = &copy;
      winner_cluster = cluster;
    }
  }
  if (winner != nullptr) {
    for (const auto& [cluster, copy] : copies) {
      if (cluster == winner_cluster) continue;
      if (WorkerLink* l = LinkOf(cluster); l != nullptr && l->connected()) DeleteCopy(*l, copy);
    }
    const std::string cluster_queue = wl->status().admission().cluster_queue();
    Metrics* metrics = options_.metrics;
    Write(key, [target, winner_cluster, cluster_queue, metrics](engine::Engine& engine,
                                                                 absl::Time at) {
      absl::Status s = engine.RecordWorkerAdmission(target, winner_cluster, at).status();
      if (s.ok() && metrics != nullptr) {
        metrics->Add("kueue_multikueue_workloads_admitted_total",
                     "Workloads admitted in a worker cluster (the check turned Ready).",
                     {{"cluster_queue", cluster_queue}, {"cluster", winner_cluster}});
      }
      return s;
    });
    return;
  }

  // Nominate once every other check is Ready.
  for (const v1::AdmissionCheckState& c : wl->status().admission_checks()) {
    if (c.name() != check && c.state() != "Ready") return;
  }
  // An elastic scale-up slice goes to the worker its predecessor runs in, and nowhere else.
  if (!wl->status().cluster_name().empty()) {
    const std::string& cluster = wl->status().cluster_name();
    for (const auto& [c, copy] : copies) {
      if (c == cluster) continue;
      if (WorkerLink* l = LinkOf(c); l != nullptr && l->connected()) DeleteCopy(*l, copy);
    }
    WorkerLink* link = LinkOf(cluster);
    if (link != nullptr && link->connected() && copies.count(cluster) == 0) {
      link->Submit(MakeCopy(*wl, cluster), wl->status().admission().cluster_queue());
    }
    return;
  }
  const std::vector<std::string> clusters = ClustersOf(check);
  std::vector<std::string> nominated(wl->status().nominated_cluster_names().begin(),
                                     wl->status().nominated_cluster_names().end());
  std::vector<std::string> want;
  if (options_.dispatcher_name == kIncremental) {
    want = nominated;
    const absl::Time round_end =
        wl->status().has_nomination_time()
            ? TimeOf(wl->status().nomination_time()) + options_.round_timeout
            : now;
    if (want.empty() || now >= round_end) {
      int added = 0;
      for (const std::string& c : clusters) {
        if (added >= options_.step_size) break;
        if (std::find(want.begin(), want.end(), c) != want.end()) continue;
        want.push_back(c);
        ++added;
      }
      if (added > 0) WakeAt(now + options_.round_timeout, key);
    } else {
      WakeAt(round_end, key);
    }
  } else {
    for (const std::string& c : clusters) {
      if (WorkerLink* l = LinkOf(c); l != nullptr && l->connected()) want.push_back(c);
    }
    std::sort(want.begin(), want.end());
  }
  if (want != nominated) {
    Write(key, [target, want](engine::Engine& engine, absl::Time at) {
      return engine.NominateClusters(target, want, at).status();
    });
    return;  // copies follow the stored nominations
  }
  for (const std::string& c : nominated) {
    WorkerLink* link = LinkOf(c);
    if (link == nullptr || !link->connected() || copies.count(c) > 0) continue;
    link->Submit(MakeCopy(*wl, c), wl->status().admission().cluster_queue());
  }
  for (const auto& [cluster, copy] : copies) {
    if (std::find(nominated.begin(), nominated.end(), cluster) != nominated.end()) continue;
    if (WorkerLink* l = LinkOf(cluster); l != nullptr && l->connected()) DeleteCopy(*l, copy);
  }
}


}  // namespace admitd::multikueue
