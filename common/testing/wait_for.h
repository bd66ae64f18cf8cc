// Test-only: polls a condition until it holds or a time limit passes (tests of processes and
// threads that change state on their own).
#ifndef ADMITD_COMMON_TESTING_WAIT_FOR_H_
#define ADMITD_COMMON_TESTING_WAIT_FOR_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace admitd::testing {

// Polls `done` every 20 ms until it holds or `limit` has passed; returns its last answer.
template <typename F>
bool WaitFor(F done, absl::Duration limit = absl::Seconds(10)) {
  for (absl::Time until = absl::Now() + limit; absl::Now() < until;) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return done();
}

}  // namespace admitd::testing

#endif  // ADMITD_COMMON_TESTING_WAIT_FOR_H_
