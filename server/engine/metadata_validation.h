// Kubernetes' rules for the metadata every object carries, with the API server's messages: label
// keys and values, annotation keys and their total size, the length of status messages, and the
// names of the clusters whose shims report to admitd. Size limits are Kubernetes' own where it has
// them (256 KiB of annotations, 32 KiB for a condition's message); an object's total size is
// checked against EngineOptions::max_object_bytes by the engine.
//
//   Violations out;
//   CheckLabels(&out, "metadata.labels", wl.metadata().labels());
//   CheckClusterName(&out, "cluster", request.cluster());
//
// Thread safety: pure functions.
#ifndef ADMITD_SERVER_ENGINE_METADATA_VALIDATION_H_
#define ADMITD_SERVER_ENGINE_METADATA_VALIDATION_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "admitd/v1/objects.pb.h"
#include "server/engine/validation.h"

namespace admitd::engine {

inline constexpr size_t kMaxAnnotationBytes = 256 * 1024;  // keys and values together
inline constexpr size_t kMaxMessageBytes = 32 * 1024;      // a condition's or check's message
inline constexpr size_t kMaxClusterNameBytes = 63;

using StringMap = google::protobuf::Map<std::string, std::string>;

// A label or annotation key: an optional DNS-subdomain prefix and '/', then a name of at most 63
// alphanumerics, '-', '_' or '.', starting and ending alphanumeric.
bool IsQualifiedName(absl::string_view key);

void CheckLabels(Violations* out, const std::string& field, const StringMap& labels);
void CheckAnnotations(Violations* out, const std::string& field, const StringMap& annotations);
// Labels and annotations of `meta`, under "<field>.labels" and "<field>.annotations".
void CheckObjectMeta(Violations* out, const std::string& field, const v1::ObjectMeta& meta);
// A free-text message of at most kMaxMessageBytes.
void CheckMessage(Violations* out, const std::string& field, const std::string& message);
// A cluster name, as a shim gives it: required, a lowercase RFC 1123 label (so it can name a
// MultiKueueCluster, label a metric and never contain the '/' that separates keys).
void CheckClusterName(Violations* out, const std::string& field, const std::string& name);
// The object's encoded size against `max_bytes` (0: no limit).
void CheckObjectSize(Violations* out, const std::string& field, const std::string& what,
                     size_t bytes, size_t max_bytes);

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_METADATA_VALIDATION_H_
