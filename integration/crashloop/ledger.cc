#include "integration/crashloop/ledger.h"

#include "absl/strings/str_cat.h"

namespace admitd::crashloop {

const char* OpName(Op op) {
  switch (op) {
    case Op::kSubmit:
      return "submit";
    case Op::kImport:
      return "import";
    case Op::kResize:
      return "resize";
    case Op::kFinish:
      return "finish";
    case Op::kReclaim:
      return "reclaim";
    case Op::kDelete:
      return "delete";
    case Op::kReportPods:
      return "report-pods";
    case Op::kCount:
      break;
  }
  return "?";
}

void OpCounts::Add(const OpCounts& other) {
  for (size_t i = 0; i < n.size(); ++i) n[i] += other.n[i];
}

int64_t OpCounts::Total() const {
  int64_t total = 0;
  for (int64_t v : n) total += v;
  return total;
}

std::string OpCounts::ToString() const {
  std::string out;
  for (size_t i = 0; i < n.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ", ", OpName(static_cast<Op>(i)), " ", n[i]);
  }
  return out;
}

}  // namespace admitd::crashloop
