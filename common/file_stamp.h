// Files that admitd and the shim read again when they change (serving certificates, the
// authorization policy, JWKS files): their whole text, and a stamp that identifies one version.
//
//   std::string seen = FileStamp(path);
//   ... later: if (FileStamp(path) != seen) reload(ReadWholeFile(path));
//
// Thread safety: plain functions.
#ifndef ADMITD_COMMON_FILE_STAMP_H_
#define ADMITD_COMMON_FILE_STAMP_H_

#include <string>

#include "absl/status/statusor.h"

namespace admitd {

// The file's bytes; FAILED_PRECONDITION "cannot read <path>" when it cannot be opened.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

// What identifies a version of a file (device, inode, modification time, size): a rename, a
// rewrite or a symlink swap changes it. "-" for no path, "?" for a file that cannot be stat'ed.
std::string FileStamp(const std::string& path);

}  // namespace admitd

#endif  // ADMITD_COMMON_FILE_STAMP_H_
