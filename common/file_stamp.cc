#include "common/file_stamp.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace admitd {

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::FailedPreconditionError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string FileStamp(const std::string& path) {
  if (path.empty()) return "-";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "?";
  return absl::StrCat(st.st_dev, ":", st.st_ino, ":", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec,
                      ":", st.st_size);
}

}  // namespace admitd
