// Kueue's checks of the Topology Aware Scheduling request annotations on one pod set's metadata
// (jobframework.ValidateTASPodSetRequest), with its messages, for every kind's webhook: on a pod
// template's `metadata.annotations`, or a plain pod's own: at most one of the required, preferred and
// unconstrained topology annotations; topology levels that are label names; the pod-set group
// name, slice size and slice topology together or not at all; the multi-layer slice constraints
// (`kueue.x-k8s.io/podset-slice-required-topology-constraints`, a JSON array of 1 to 3
// {topology, size} layers, each size dividing the one above).
//
//   std::vector<FieldError> errs = TasPodSetRequestErrors("metadata", annotations, true);
//
// A constraints annotation that is not JSON is refused with Go's message when the value ends
// early ("unexpected end of JSON input") or its first character starts no JSON value ("invalid
// character 'x' looking for beginning of value"); for a bad character further on, where Go names
// the scanner's state, the message reads "invalid character 'x' in JSON input". JSON of the wrong
// shape gets Go's texts ("json: cannot unmarshal string into Go struct field
// PodsetSliceRequiredTopologyConstraint.size of type int32").
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_TAS_RULES_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_TAS_RULES_H_

#include <string>
#include <vector>

#include "clients/shim/webhook/field_errors.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// The errors for the annotations `annotations` (a JSON object of strings, or null) found at
// `<replica_path>.annotations`, in Kueue's order. `multi_layer` is the TASMultiLayerTopology
// feature gate: off, the constraints annotation is refused.
std::vector<FieldError> TasPodSetRequestErrors(const std::string& replica_path,
                                               const nlohmann::json& annotations, bool multi_layer);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_TAS_RULES_H_
