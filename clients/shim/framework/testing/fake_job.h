// A job kind made up for the generic reconcile's unit tests (example.com/v1 FakeJob): the
// smallest GenericJob, read from plain fields so a test states the job's state directly.
//
//   spec.suspend, spec.count (pods, default 1), spec.template (one pod template, pod set "main"),
//   status.active (pods running), status.ready, status.finished ("Succeeded" or "Failed", with
//   status.message), status.reclaimable (pods of "main" no longer needing quota), status.onHold;
//   annotation kueue.x-k8s.io/elastic-job: "true" makes it elastic.
//
// Thread safety: immutable.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_TESTING_FAKE_JOB_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_TESTING_FAKE_JOB_H_

#include <memory>

#include "clients/shim/framework/integration.h"

namespace admitd::shim::testing {

std::unique_ptr<Integration> NewFakeJobIntegration();

// A FakeJob "ns/name" with a queue name, `count` pods and one container.
nlohmann::json FakeJobObject(const std::string& ns, const std::string& name, int count = 1);

}  // namespace admitd::shim::testing

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_TESTING_FAKE_JOB_H_
