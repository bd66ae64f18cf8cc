// admitctl's command line: its commands, the kinds they name and its flags, each declared once
// (a flag's names, value, meaning and the commands that read it), parsed into Args; --help and
// docs/configuration.md's table come from the same tables. An unknown flag or command is refused
// with the closest known one suggested.
//
//   absl::StatusOr<Args> args = ParseArgs({"get", "wl", "-n", "team-a"});
//   args->Get("-n");  // "team-a"
#ifndef ADMITD_CLIENTS_ADMITCTL_FLAGS_H_
#define ADMITD_CLIENTS_ADMITCTL_FLAGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "admitd/v1/queue_service.pb.h"
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
// One command as --help shows it: its name, how it is called (lines separated by "\n") and what
// it does.
struct CommandHelp {
  std::string name;
  std::string synopsis;
  std::string help;
};
// The commands, in the order --help lists them.
const std::vector<CommandHelp>& AdmitctlCommands();
// The kind a name given to get, delete or watch --kind means (a kind's name, its plural or a short
// name, as kubectl takes them), or OBJECT_KIND_UNSPECIFIED.
v1::ObjectKind KindFromName(const std::string& name);
// The message for an unknown command, with the closest known one suggested.
std::string UnknownCommand(const std::string& name);

// The --help text: the commands (with the kinds), then the flags.
std::string AdmitctlUsage();

}  // namespace admitd::clients

#endif  // ADMITD_CLIENTS_ADMITCTL_FLAGS_H_
