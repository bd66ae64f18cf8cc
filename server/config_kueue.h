// The sections of a Kueue Configuration that admitd reads as they are written for Kueue
// (fairSharing, admissionFairSharing and waitForPodsReady, in their v1beta1 and v1beta2
// spellings): their settings,
// and the defaults and checks Kueue applies once the whole file and the flags are read.
#ifndef ADMITD_SERVER_CONFIG_KUEUE_H_
#define ADMITD_SERVER_CONFIG_KUEUE_H_

#include "absl/status/status.h"
#include "common/settings.h"
#include "server/config.h"

namespace admitd {

// Declares the sections' keys in `table`, each writing into `config`.
void AddKueueSections(settings::Table* table, Config* config);

// After reading: what a section's presence or `enable` turns on, Kueue's defaults for what it
// leaves out, and Kueue's validation ("fairSharing.preemptionStrategies: Required value: must be
// specified").
absl::Status ResolveKueueSections(Config* config);

}  // namespace admitd

#endif  // ADMITD_SERVER_CONFIG_KUEUE_H_
