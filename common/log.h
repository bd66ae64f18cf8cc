// Structured logging: one line per record on stderr, as logfmt
//   ts=2026-11-22T12:00:00.123456Z level=info msg="listening" addr=127.0.0.1:50051
//
//   ADMITD_LOG(kInfo, "recovered", {{"workloads", absl::StrCat(n)}});
//
// Thread-safe: records from many threads never interleave within a line.
#ifndef ADMITD_COMMON_LOG_H_
#define ADMITD_COMMON_LOG_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace admitd::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Records below `level` are dropped. Default kInfo.
void SetLevel(Level level);
Level GetLevel();
// Parses "debug", "info", "warning"/"warn", "error". False when unknown.
bool ParseLevel(absl::string_view text, Level* level);
// Whether ParseLevel accepts `text`.
inline bool IsLevel(absl::string_view text) {
  Level level;
  return ParseLevel(text, &level);
}

using Fields = std::vector<std::pair<std::string, std::string>>;
void Write(Level level, absl::string_view msg, const Fields& fields = {});

}  // namespace admitd::log

#define ADMITD_LOG(level, ...)                                                  \
  do {                                                                          \
    if (::admitd::log::Level::level >= ::admitd::log::GetLevel())               \
      ::admitd::log::Write(::admitd::log::Level::level, __VA_ARGS__);           \
  } while (0)

#endif  // ADMITD_COMMON_LOG_H_
