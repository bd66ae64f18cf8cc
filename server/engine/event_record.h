// EventRecord: a Kubernetes Event (v1::Event) as the engine records it, in plain fields.
//
// Kueue records two Events per admission and more per eviction, preemption or failed attempt;
// building each as a protobuf message on the engine's one thread cost a tenth of a decision. The
// engine fills a record instead (a few string copies), and whoever needs more does the rest on
// its own thread: EncodeEvent writes the wire form straight from the record (what the event log
// and Watch streams carry), ToEvent builds the message (for watch filters, tracing, tests).
#ifndef ADMITD_SERVER_ENGINE_EVENT_RECORD_H_
#define ADMITD_SERVER_ENGINE_EVENT_RECORD_H_

#include <string>

#include "absl/time/time.h"
#include "admitd/v1/objects.pb.h"

namespace admitd::engine {

// apiVersion of the object every recorded Event is about (a Kueue object).
inline constexpr char kEventRegardingApiVersion[] = "kueue.x-k8s.io/v1beta2";

struct EventRecord {
  bool warning = false;  // type Warning, else Normal
  std::string reason;
  std::string action;
  std::string note;
  // The object it is about (regarding; apiVersion kEventRegardingApiVersion).
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string reporting_controller;
  std::string cluster_queue;
  std::string cluster;
  std::string user;
  absl::Time time;
};

// The Event as a message: regarding and eventTime always set, as the engine always recorded them.
v1::Event ToEvent(const EventRecord& record);

// ToEvent(record).SerializeAsString(), byte for byte, without building the message.
std::string EncodeEvent(const EventRecord& record);

// The record of `event` (its regarding apiVersion is not kept: see kEventRegardingApiVersion).
EventRecord FromEvent(const v1::Event& event);

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_EVENT_RECORD_H_
