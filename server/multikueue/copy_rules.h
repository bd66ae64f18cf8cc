// What the MultiKueue dispatcher reads off workloads and their copies: conditions, the
// reservation a copy belongs to, elastic slices, and why a job cannot be dispatched (Kueue's
// Rejected messages). Pure functions, shared by the dispatcher's files.
#ifndef ADMITD_SERVER_MULTIKUEUE_COPY_RULES_H_
#define ADMITD_SERVER_MULTIKUEUE_COPY_RULES_H_

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "admitd/v1/objects.pb.h"
#include "common/kueue_keys.h"

namespace admitd::multikueue::rules {


std::string Key(const v1::ObjectMeta& meta);
const v1::Condition* FindCondition(const v1::Workload& wl, const std::string& type);
bool IsTrue(const v1::Workload& wl, const std::string& type);
absl::Time TimeOf(const google::protobuf::Timestamp& ts);
bool HoldsReservation(const v1::Workload& wl);
std::string ReservationId(const v1::Workload& wl);
const v1::AdmissionCheckState* CheckState(const v1::Workload& wl, const std::string& check);
bool IsElastic(const v1::Workload& wl);
bool ScaledDown(const v1::Workload& local, const v1::Workload& copy);
std::string AnnotationOf(const v1::Workload& wl, const std::string& name);
std::optional<std::string> RejectionOf(const v1::Workload& wl);

}  // namespace admitd::multikueue::rules

#endif  // ADMITD_SERVER_MULTIKUEUE_COPY_RULES_H_
