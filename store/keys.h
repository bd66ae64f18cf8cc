// The on-disk layout of admitd's RocksDB database, in one place. docs/storage-format.md
// describes it in prose; change both together and bump kFormatVersion when a change is not
// readable by older binaries.
//
//   column family              key                         value
//   resource_flavors           name                        admitd.v1.QueueObject
//   cohorts                    name                        admitd.v1.QueueObject
//   cluster_queues             name                        admitd.v1.QueueObject
//   local_queues               namespace/name              admitd.v1.QueueObject
//   workload_priority_classes  name                        admitd.v1.QueueObject
//   admission_checks           name                        admitd.v1.QueueObject
//   namespaces                 name                        admitd.v1.QueueObject
//   multikueue_configs         name                        admitd.v1.QueueObject
//   multikueue_clusters        name                        admitd.v1.QueueObject
//   workloads                  namespace/name              admitd.v1.Workload
//   pods                       cluster/namespace/name      admitd.v1.PodObservation
//   events                     8-byte big-endian revision  admitd.v1.WatchEvent
//   meta                       "revision"                  8-byte big-endian revision
//                              "format_version"            8-byte big-endian version
//                              "event_floor"               8-byte big-endian revision; absent
//                                                          until the first compaction (then 1)
//
// Everything here is a pure function or a constant; safe from any thread.
#ifndef ADMITD_STORE_KEYS_H_
#define ADMITD_STORE_KEYS_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "admitd/v1/queue_service.pb.h"

namespace admitd::store {

// 2 added the admission_checks family, 3 the pods family, 4 the namespaces family, 5 the
// multikueue_configs and multikueue_clusters families; older stores are upgraded when opened (the
// families are created empty).
inline constexpr uint64_t kFormatVersion = 5;

inline constexpr char kEventsFamily[] = "events";
inline constexpr char kMetaFamily[] = "meta";
inline constexpr char kRevisionKey[] = "revision";
inline constexpr char kFormatVersionKey[] = "format_version";
// Every logged event at or above this revision is retained; lower ones were compacted away.
inline constexpr char kEventFloorKey[] = "event_floor";

// Object kinds in the order ForEachObject visits them: the queue objects before the workloads
// that refer to them.
inline constexpr v1::ObjectKind kStoredKinds[] = {
    v1::OBJECT_KIND_NAMESPACE,     v1::OBJECT_KIND_RESOURCE_FLAVOR,
    v1::OBJECT_KIND_COHORT,        v1::OBJECT_KIND_CLUSTER_QUEUE,
    v1::OBJECT_KIND_LOCAL_QUEUE,   v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS,
    v1::OBJECT_KIND_ADMISSION_CHECK, v1::OBJECT_KIND_MULTIKUEUE_CONFIG,
    v1::OBJECT_KIND_MULTIKUEUE_CLUSTER, v1::OBJECT_KIND_WORKLOAD,
    v1::OBJECT_KIND_POD};

// The column family holding objects of `kind`; empty for kinds that are not stored.
inline absl::string_view FamilyFor(v1::ObjectKind kind) {
  switch (kind) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR:
      return "resource_flavors";
    case v1::OBJECT_KIND_COHORT:
      return "cohorts";
    case v1::OBJECT_KIND_CLUSTER_QUEUE:
      return "cluster_queues";
    case v1::OBJECT_KIND_LOCAL_QUEUE:
      return "local_queues";
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS:
      return "workload_priority_classes";
    case v1::OBJECT_KIND_WORKLOAD:
      return "workloads";
    case v1::OBJECT_KIND_ADMISSION_CHECK:
      return "admission_checks";
    case v1::OBJECT_KIND_POD:
      return "pods";
    case v1::OBJECT_KIND_NAMESPACE:
      return "namespaces";
    case v1::OBJECT_KIND_MULTIKUEUE_CONFIG:
      return "multikueue_configs";
    case v1::OBJECT_KIND_MULTIKUEUE_CLUSTER:
      return "multikueue_clusters";
    default:
      return "";
  }
}

// Big-endian, so RocksDB's bytewise key order is numeric order.
inline std::string EncodeUint64(uint64_t value) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(value & 0xff);
    value >>= 8;
  }
  return out;
}

// False (and `*value` untouched) when `bytes` is not 8 bytes long.
inline bool DecodeUint64(absl::string_view bytes, uint64_t* value) {
  if (bytes.size() != 8) return false;
  uint64_t v = 0;
  for (unsigned char c : bytes) v = (v << 8) | c;
  *value = v;
  return true;
}

// The key of the event logged at `revision` in the events family.
inline std::string EventKey(uint64_t revision) { return EncodeUint64(revision); }

// The revision an events-family key names; false when the key is malformed.
inline bool DecodeEventKey(absl::string_view key, uint64_t* revision) {
  return DecodeUint64(key, revision);
}

}  // namespace admitd::store

#endif  // ADMITD_STORE_KEYS_H_
