// UTF-8 checks for text that goes into protobuf strings or JSON: one sequence decoded at a time,
// and text quoted from user input (a parser's error, say) made valid, each byte that does not
// start a valid sequence becoming U+FFFD, as Go's JSON encoding (and so a Kubernetes message)
// has it.
#ifndef ADMITD_COMMON_UTF8_H_
#define ADMITD_COMMON_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace admitd {

// Decodes the UTF-8 sequence at s[i] (i < s.size()) into `rune`; returns its length, or 0 when
// it is not a valid one (cut short, overlong, a surrogate, past U+10FFFF).
size_t DecodeUtf8(absl::string_view s, size_t i, uint32_t* rune);

// `s` with every byte that does not start a valid sequence replaced by U+FFFD.
std::string ToValidUtf8(absl::string_view s);

}  // namespace admitd

#endif  // ADMITD_COMMON_UTF8_H_
