// Fuzz target: Kubernetes quantities. The first byte picks a resource (CPU in millicores, a
// BinarySI resource, DecimalSI ones), the rest is the quantity text. Checks:
// - a parsed value formats to text that parses back to the same value;
// - a quantity the engine accepts is one Kubernetes accepts (CanonicalQuantity, Go's parser);
// - Kubernetes' canonical form of the text (and the canonical form of that) has the text's
//   value (Go's String() keeps the format, so it is not idempotent: "62.5Ki" -> "64000" -> "64k").
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "server/engine/quantity.h"
#include "server/pods/go_quantity.h"

namespace {

constexpr const char* kResources[] = {"cpu",           "memory",          "pods",
                                      "hugepages-2Mi", "example.com/gpu", "ephemeral-storage"};

[[noreturn]] void Fail(const char* what, absl::string_view resource, absl::string_view text,
                       absl::string_view detail) {
  fprintf(stderr, "%s: resource %.*s, quantity \"%.*s\": %.*s\n", what,
          static_cast<int>(resource.size()), resource.data(), static_cast<int>(text.size()),
          text.data(), static_cast<int>(detail.size()), detail.data());
  abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using admitd::engine::FormatQuantity;
  using admitd::engine::ParseQuantity;
  if (size == 0) return 0;
  const absl::string_view resource = kResources[data[0] % std::size(kResources)];
  const absl::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  absl::StatusOr<int64_t> value = ParseQuantity(resource, text);
  if (value.ok()) {
    const std::string formatted = FormatQuantity(resource, *value);
    absl::StatusOr<int64_t> back = ParseQuantity(resource, formatted);
    if (!back.ok() || *back != *value) {
      Fail("format does not round-trip", resource, text,
           formatted + " -> " + (back.ok() ? std::to_string(*back) : back.status().ToString()));
    }
  }

  absl::StatusOr<std::string> canonical = admitd::pods::CanonicalQuantity(text);
  if (value.ok() && !canonical.ok()) {
    Fail("accepted, but not a Kubernetes quantity", resource, text, canonical.status().ToString());
  }
  // Negative quantities are refused wherever admitd takes one (requests, quotas, usage), so how a
  // negative fraction rounds is not checked against Go's canonical form.
  if (canonical.ok() && value.ok() && !absl::StartsWith(text, "-")) {
    // Go's String() keeps the format, so it is not idempotent ("62.5Ki" -> "64000" -> "64k"),
    // but every step keeps the value.
    absl::StatusOr<std::string> again = admitd::pods::CanonicalQuantity(*canonical);
    if (!again.ok()) Fail("canonical form does not parse", resource, text, *canonical);
    for (const std::string& form : {*canonical, *again}) {
      absl::StatusOr<int64_t> from_form = ParseQuantity(resource, form);
      if (from_form.ok() && *from_form != *value) {
        Fail("canonical form has another value", resource, text,
             form + " -> " + std::to_string(*from_form) + " != " + std::to_string(*value));
      }
    }
  }
  return 0;
}
