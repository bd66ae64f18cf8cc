// The framing the proto-driven fuzz targets read their input in: a sequence of
// records, each a selector byte (which call), a 16-bit little-endian length and
// that many bytes of payload (the serialized request). A truncated last record
// is cut to the bytes left. make_seeds.cc writes seeds in the same framing.
//
// Thread safety: pure functions over caller-owned buffers.
#ifndef ADMITD_FUZZ_RECORDS_H_
#define ADMITD_FUZZ_RECORDS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace admitd::fuzz {

struct Record {
  uint8_t selector = 0;
  absl::string_view payload;
};

inline std::vector<Record> SplitRecords(const uint8_t* data, size_t size) {
  std::vector<Record> out;
  size_t at = 0;
  while (at + 3 <= size) {
    Record r;
    r.selector = data[at];
    size_t len = data[at + 1] | (static_cast<size_t>(data[at + 2]) << 8);
    at += 3;
    len = std::min(len, size - at);
    r.payload = absl::string_view(reinterpret_cast<const char*>(data + at), len);
    at += len;
    out.push_back(r);
  }
  return out;
}

// Appends one record; payloads longer than 65535 bytes are cut.
inline void AppendRecord(uint8_t selector, absl::string_view payload, std::string* out) {
  const size_t len = std::min<size_t>(payload.size(), 0xffff);
  out->push_back(static_cast<char>(selector));
  out->push_back(static_cast<char>(len & 0xff));
  out->push_back(static_cast<char>(len >> 8));
  out->append(payload.data(), len);
}

}  // namespace admitd::fuzz

#endif  // ADMITD_FUZZ_RECORDS_H_
