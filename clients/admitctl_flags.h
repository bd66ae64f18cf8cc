// admitctl's command line: its flags declared once each (names, value, meaning, the commands that
// read it), parsed into Args; --help and docs/configuration.md's table come from the same table.
// An unknown flag is refused with the closest known one suggested.
//
//   absl::StatusOr<Args> args = ParseArgs({"get", "wl", "-n", "team-a"});
//   args->Get("-n");  // "team-a"
#ifndef ADMITD_CLIENTS_ADMITCTL_FLAGS_H_
#define ADMITD_CLIENTS_ADMITCTL_FLAGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/settings.h"

namespace admitd::clients {

// A parsed command line: the command and its arguments, and each flag's values in order, under
// the flag's canonical name (the short one where it has one: "-n", "-f", "-o", "-A", "-w"). A
// switch holds "true" (or the value it was given); --finished holds succeeded or failed.
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> flags;
  bool help = false;  // -h or --help
  bool Has(const std::string& flag) const { return flags.count(flag) > 0; }
  // The flag's last value, or `def` when it was not given (or given empty).
  std::string Get(const std::string& flag, const std::string& def = "") const;
};

// admitctl's flags, each recording into `args`.
settings::Table AdmitctlFlags(Args* args);
// INVALID_ARGUMENT names the flag at fault.
absl::StatusOr<Args> ParseArgs(const std::vector<std::string>& argv);
// The --help text: the commands, then the flags.
std::string AdmitctlUsage();

}  // namespace admitd::clients

#endif  // ADMITD_CLIENTS_ADMITCTL_FLAGS_H_
