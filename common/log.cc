#include "common/log.h"

#include <atomic>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace admitd::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};

const char* LevelName(Level level) {
  switch (level) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarning: return "warning";
    case Level::kError: return "error";
  }
  return "info";
}

// Quotes a value when logfmt needs it (spaces, quotes, '=' or empty).
void AppendValue(std::string* out, absl::string_view value) {
  bool quote = value.empty();
  for (char c : value) {
    if (c == ' ' || c == '"' || c == '=' || c == '\n' || c == '\t') quote = true;
  }
  if (!quote) {
    out->append(value.data(), value.size());
    return;
  }
  out->push_back('"');
  for (char c : value) {
    if (c == '"' || c == '\\') out->push_back('\\');
    if (c == '\n') {
      out->append("\\n");
      continue;
    }
    out->push_back(c);
  }
  out->push_back('"');
}

}  // namespace

void SetLevel(Level level) { g_level.store(static_cast<int>(level)); }
Level GetLevel() { return static_cast<Level>(g_level.load(std::memory_order_relaxed)); }

bool ParseLevel(absl::string_view text, Level* level) {
  std::string t = absl::AsciiStrToLower(text);
  if (t == "debug") *level = Level::kDebug;
  else if (t == "info") *level = Level::kInfo;
  else if (t == "warning" || t == "warn") *level = Level::kWarning;
  else if (t == "error") *level = Level::kError;
  else return false;
  return true;
}

void Write(Level level, absl::string_view msg, const Fields& fields) {
  std::string line = absl::StrCat(
      "ts=", absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone()),
      " level=", LevelName(level), " msg=");
  AppendValue(&line, msg);
  for (const auto& [key, value] : fields) {
    absl::StrAppend(&line, " ", key, "=");
    AppendValue(&line, value);
  }
  line.push_back('\n');
  // One fwrite per line: stdio locks the stream, so lines never interleave.
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace admitd::log
