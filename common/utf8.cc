#include "common/utf8.h"

namespace admitd {

size_t DecodeUtf8(absl::string_view s, size_t i, uint32_t* rune) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t r, min;
  if (b0 < 0x80) {
    *rune = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    n = 2, r = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3, r = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4, r = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    r = (r << 6) | (b & 0x3F);
  }
  if (r < min || r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF)) return 0;
  *rune = r;
  return n;
}

std::string ToValidUtf8(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t rune = 0;
    const size_t n = DecodeUtf8(s, i, &rune);
    if (n == 0) {
      out.append("\xEF\xBF\xBD");  // U+FFFD
      ++i;
      continue;
    }
    out.append(s.data() + i, n);
    i += n;
  }
  return out;
}

}  // namespace admitd
