#include "server/engine/conditions.h"

#include "google/protobuf/util/time_util.h"

namespace admitd::engine {
namespace {

// Kubernetes' limit on a condition message.
constexpr size_t kMaxMessage = 32768;

}  // namespace

const v1::Condition* FindCondition(const v1::Workload& wl, absl::string_view type) {
  for (const v1::Condition& c : wl.status().conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

bool IsConditionTrue(const v1::Workload& wl, absl::string_view type) {
  const v1::Condition* c = FindCondition(wl, type);
  return c != nullptr && c->status() == "True";
}

bool ConditionIs(const v1::Workload& wl, absl::string_view type, bool status,
                 absl::string_view reason, absl::string_view message) {
  const v1::Condition* found = nullptr;
  for (const v1::Condition& c : wl.status().conditions()) {
    if (c.type() == type) found = &c;  // the last of the type, as SetCondition
  }
  return found != nullptr && found->status() == (status ? "True" : "False") &&
         found->reason() == reason && found->message() == message.substr(0, kMaxMessage) &&
         found->observed_generation() == wl.metadata().generation();
}

bool SetCondition(v1::Workload* wl, absl::string_view type, bool status, absl::string_view reason,
                  absl::string_view message, absl::Time now) {
  const absl::string_view status_text = status ? "True" : "False";
  const absl::string_view msg = message.substr(0, kMaxMessage);
  const int64_t generation = wl->metadata().generation();
  // One pass finds the last condition of the type; an equal one is left alone (no write).
  v1::Condition* found = nullptr;
  for (v1::Condition& c : *wl->mutable_status()->mutable_conditions()) {
    if (c.type() == type) found = &c;
  }
  if (found != nullptr && found->status() == status_text && found->reason() == reason &&
      found->message() == msg && found->observed_generation() == generation) {
    return false;
  }
  // Strings are assigned in place (no temporary copies): this runs several times per admission.
  if (found == nullptr) {
    found = wl->mutable_status()->add_conditions();
    found->mutable_type()->assign(type.data(), type.size());
  }
  if (found->status() != status_text) {
    const int64_t nanos = absl::ToUnixNanos(now);
    google::protobuf::Timestamp* at = found->mutable_last_transition_time();
    at->set_seconds(nanos / 1000000000);
    at->set_nanos(static_cast<int32_t>(nanos % 1000000000));
  }
  found->mutable_status()->assign(status_text.data(), status_text.size());
  found->mutable_reason()->assign(reason.data(), reason.size());
  found->mutable_message()->assign(msg.data(), msg.size());
  found->set_observed_generation(generation);
  return true;
}

bool RemoveCondition(v1::Workload* wl, absl::string_view type) {
  auto* conditions = wl->mutable_status()->mutable_conditions();
  for (int i = 0; i < conditions->size(); ++i) {
    if (conditions->Get(i).type() == type) {
      conditions->DeleteSubrange(i, 1);
      return true;
    }
  }
  return false;
}

bool SetPending(v1::Workload* wl, absl::string_view reason, absl::string_view message,
                absl::Time now) {
  bool changed = SetCondition(wl, kQuotaReserved, false, reason, message, now);
  changed |= SetCondition(wl, kAdmitted, false, kReasonNoReservation,
                          "The workload has no reservation", now);
  return changed;
}

}  // namespace admitd::engine
