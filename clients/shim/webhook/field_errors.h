// Kubernetes' validation error texts, for the shim's admission webhooks: a field error printed as
// apimachinery prints one (`<path>: <Type>[: <value>][: <detail>]`, string values Go-quoted,
// numbers and booleans bare), a list of them aggregated as `[e1, e2]`, the DNS-1123 subdomain and
// label-key checks with their messages, and the texts of Go's strconv errors that Kueue passes
// through (`strconv.Atoi: parsing "x": invalid syntax`).
//
//   std::vector<FieldError> errs;
//   errs.push_back(FieldError::Invalid("metadata.labels[k]", GoQuote(v), "field is immutable"));
//   std::string message = AggregateErrors(errs);
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_WEBHOOK_FIELD_ERRORS_H_
#define ADMITD_CLIENTS_SHIM_WEBHOOK_FIELD_ERRORS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace admitd::shim {

// apimachinery's detail of a change to an immutable field.
inline constexpr char kImmutable[] = "field is immutable";
// The longest label value Kubernetes accepts.
inline constexpr size_t kLabelValueMaxLength = 63;

// One field error (k8s.io/apimachinery/pkg/util/validation/field).
struct FieldError {
  std::string path;        // "metadata.labels[kueue.x-k8s.io/queue-name]"
  std::string type;        // "Invalid value", "Forbidden", "Required value", "Too long", ...
  std::string value_text;  // the bad value as printed ("\"x\"", "5", "null"); empty: not shown
  std::string detail;      // may be empty

  // `<path>: <type>[: <value_text>][: <detail>]`.
  std::string ToString() const;

  static FieldError Invalid(std::string path, std::string value_text, std::string detail);
  static FieldError Forbidden(std::string path, std::string detail);
  static FieldError Required(std::string path, std::string detail);
  static FieldError Duplicate(std::string path, std::string value_text);
  // "Too long: may not be more than <n> bytes".
  static FieldError TooLong(std::string path, int max_bytes);

  friend bool operator==(const FieldError& a, const FieldError& b) {
    return a.ToString() == b.ToString();
  }
};

// Kubernetes' aggregate of a list of errors: empty for none, the one message alone, otherwise
// `[e1, e2, ...]`; an error whose text was already printed is left out.
std::string AggregateErrors(const std::vector<FieldError>& errors);

// Go's %q of a string (strconv.Quote): how a bad value of type string is printed.
std::string GoQuote(const std::string& s);
// Go's encoding/json of a string: how a bad value of a named string type (Kueue's
// LocalQueueName) is printed; <, > and & become \u003c, \u003e, \u0026.
std::string JsonQuote(const std::string& s);

// IsDNS1123Subdomain's messages for `value` (empty when it is one).
std::vector<std::string> DnsSubdomainErrors(const std::string& value);
// IsQualifiedName's (a label key's) messages for `value` (empty when it is one).
std::vector<std::string> LabelKeyErrors(const std::string& value);
// apimachinery's RegexError text: "<msg> (e.g. 'a' or 'b', regex used for validation is '<re>')".
std::string RegexError(const std::string& msg, const std::string& re,
                       const std::vector<std::string>& examples);

// strconv.Atoi (64-bit): the value, or nullopt with Go's error text in `*error`.
std::optional<int64_t> GoAtoi(const std::string& s, std::string* error);
// strconv.ParseBool: the value, or nullopt with Go's error text in `*error`.
std::optional<bool> GoParseBool(const std::string& s, std::string* error);
// strconv.ParseInt(s, 10, 32): the value when it parses.
std::optional<int32_t> GoParseInt32(const std::string& s);
// Whether strconv.ParseUint(s, 10, 64) succeeds.
bool GoParsesAsUint64(const std::string& s);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_WEBHOOK_FIELD_ERRORS_H_
