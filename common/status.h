// Error helpers shared by every layer: absl::Status builders that carry google.rpc details
// (BadRequest field violations, ErrorInfo reasons, RetryInfo delays) as payloads, and the two
// propagation macros Debian's Abseil 20220623 lacks.
//
//   ADMITD_RETURN_IF_ERROR(store->Commit(batch));
//   ADMITD_ASSIGN_OR_RETURN(Quantity q, Quantity::Parse(text));
//   return InvalidArgument({{"spec.podSets[0].count", "must be greater than or equal to 0"}});
//
// The gRPC layer (server/grpc_status.h) turns the payloads into `grpc-status-details-bin`.
#ifndef ADMITD_COMMON_STATUS_H_
#define ADMITD_COMMON_STATUS_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace admitd {

// Payload type URLs; equal to the google.rpc type URLs so they pass straight through.
inline constexpr absl::string_view kBadRequestTypeUrl =
    "type.googleapis.com/google.rpc.BadRequest";
inline constexpr absl::string_view kErrorInfoTypeUrl = "type.googleapis.com/google.rpc.ErrorInfo";
inline constexpr absl::string_view kRetryInfoTypeUrl = "type.googleapis.com/google.rpc.RetryInfo";
inline constexpr absl::string_view kErrorDomain = "admitd.io";

struct FieldViolation {
  std::string field;        // dotted path with indices, e.g. "spec.podSets[0].count"
  std::string description;  // what is wrong, in Kueue's words where Kueue has them
};

// INVALID_ARGUMENT listing every violation; the message joins them as "field: description; ...".
absl::Status InvalidArgument(const std::vector<FieldViolation>& violations);

// Attaches an ErrorInfo{reason, domain "admitd.io"} to a status of the given code.
absl::Status ErrorWithReason(absl::StatusCode code, absl::string_view reason,
                             absl::string_view message);

// NOT_FOUND for "<kind> \"<name>\" not found", with ErrorInfo reason NOT_FOUND and the field
// that named it (if any) as a BadRequest violation.
absl::Status NotFound(absl::string_view kind, absl::string_view name,
                      absl::string_view field = "");

// `status` with a google.rpc.RetryInfo{retry_delay: delay}: the call was not run and may be
// retried after `delay`.
absl::Status WithRetryDelay(absl::Status status, absl::Duration delay);

// The violations carried by a status (empty when none).
std::vector<FieldViolation> FieldViolationsOf(const absl::Status& status);
// The ErrorInfo reason carried by a status (empty when none).
std::string ErrorReasonOf(const absl::Status& status);
// The RetryInfo delay carried by a status (nullopt when none).
std::optional<absl::Duration> RetryDelayOf(const absl::Status& status);

}  // namespace admitd

#define ADMITD_STATUS_CONCAT_INNER_(a, b) a##b
#define ADMITD_STATUS_CONCAT_(a, b) ADMITD_STATUS_CONCAT_INNER_(a, b)

#define ADMITD_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status admitd_status_ = (expr);          \
    if (!admitd_status_.ok()) return admitd_status_; \
  } while (0)

#define ADMITD_ASSIGN_OR_RETURN(lhs, expr) \
  ADMITD_ASSIGN_OR_RETURN_IMPL_(ADMITD_STATUS_CONCAT_(admitd_statusor_, __LINE__), lhs, expr)

#define ADMITD_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = std::move(tmp).value()

#endif  // ADMITD_COMMON_STATUS_H_
