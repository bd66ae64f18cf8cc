// Human-readable renderings for admitctl: aligned tables of objects, workload states, Admit
// reports and one-line watch events.
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_TABLE_H_
#define ADMITD_CLIENTS_TABLE_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "admitd/v1/admission_service.pb.h"
#include "admitd/v1/objects.pb.h"
#include "admitd/v1/queue_service.pb.h"

namespace admitd::clients {

// Rows of cells as columns padded to the widest cell; the first row is the header.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

std::string StateName(const v1::Workload& wl);  // Pending, Admitted, Finished, ...
std::string ObjectName(const v1::QueueObject& o);
std::string WorkloadTable(const std::vector<v1::Workload>& workloads, absl::Time now);
std::string QueueObjectTable(v1::ObjectKind kind, const std::vector<v1::QueueObject>& objects);
std::string AdmitReport(const v1::AdmitResponse& resp);
// An audit record (an Event of reporting controller admitd-audit): revision, time, who, what,
// the object and the note.
std::string AuditLine(const v1::WatchEvent& event);
std::string EventLine(const v1::WatchEvent& event);
// "key: value" lines for one workload: its slice chain (the workload-slice-name and
// workload-slice-replacement-for annotations), the pod counts it asks for and the counts and
// flavors its admission grants; with waitForPodsReady, PodsReady and the requeue state.
std::string WorkloadDetail(const v1::Workload& wl);
// The outcome of a Resize and a table of the job's live workloads with their counts.
std::string ResizeReport(const v1::ResizeResponse& resp);

}  // namespace admitd::clients

#endif  // ADMITD_CLIENTS_TABLE_H_
