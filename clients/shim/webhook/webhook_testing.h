// Test-only: what the webhook tests share. A JobWebhookContext answered from sets the test fills,
// the texts of a list of field errors, and the message Kubernetes gives a bad DNS-1123 subdomain.
#ifndef ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_TESTING_H_
#define ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_TESTING_H_

#include <set>
#include <string>
#include <vector>

#include "clients/shim/webhook/field_errors.h"
#include "clients/shim/integrations/job/job_webhook.h"

namespace admitd::shim::webhook_testing {

inline constexpr char kDns1123[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

// Every namespace but kube-system is managed; the rest is what the test puts in the fields.
class FakeContext : public JobWebhookContext {
 public:
  bool DefaultLocalQueueExists(const std::string& ns) override { return queues.count(ns) > 0; }
  bool DefaultPriorityClassExists() override { return priority_class; }
  bool NamespaceManaged(const std::string& ns) override { return ns != "kube-system"; }
  bool LocalQueueUsesMultiKueue(const std::string& ns, const std::string& name) override {
    return multikueue.count(ns + "/" + name) > 0;
  }
  std::set<std::string> queues;      // namespaces with a LocalQueue named `default`
  std::set<std::string> multikueue;  // "ns/name" of LocalQueues of MultiKueue ClusterQueues
  bool priority_class = false;       // whether the WorkloadPriorityClass `default` exists
};

// Each error as apimachinery prints it.
inline std::vector<std::string> Texts(const std::vector<FieldError>& errs) {
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.ToString());
  return out;
}

}  // namespace admitd::shim::webhook_testing

#endif  // ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_TESTING_H_
