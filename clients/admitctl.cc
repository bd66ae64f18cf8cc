// admitctl: the command line for admitd. `admitctl help` lists the commands; each is a function of
// clients/admitctl_commands.h.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/admitctl_commands.h"
#include "clients/admitctl_flags.h"
#include "clients/client.h"
#include "common/connection.h"
#include "common/trace/trace_context.h"

namespace admitd::clients {
namespace {

int Run(int argc, char** argv) {
  absl::StatusOr<Args> parsed = ParseArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) return Usage(std::string(parsed.status().message()));
  const Args& args = *parsed;
  if (args.positional.empty() || args.positional[0] == "help" || args.help) {
    std::printf("%s", AdmitctlUsage().c_str());
    return args.positional.empty() && !args.help ? 2 : 0;
  }
  const std::string cmd = args.positional[0];
  const std::vector<CommandHelp>& commands = AdmitctlCommands();
  if (std::none_of(commands.begin(), commands.end(),
                   [&](const CommandHelp& c) { return c.name == cmd; })) {
    return Usage(UnknownCommand(cmd));
  }
  if (cmd == "version") {
    std::printf("admitctl 0.1.0 (API admitd.v1)\n");
    return 0;
  }
  std::optional<tracing::SpanContext>& trace = CommandTrace();
  if (const char* parent = std::getenv("TRACEPARENT"); parent != nullptr && *parent != '\0') {
    trace = tracing::ParseTraceparent(parent);
    if (!trace) return Usage(absl::StrCat("$TRACEPARENT \"", parent, "\" is not a W3C traceparent"));
    trace->span_id = tracing::NewSpanId();  // this command, a child of the given span
  } else if (args.Has("--trace")) {
    trace = tracing::SpanContext{tracing::NewTraceId(), tracing::NewSpanId(), true, "", false};
  }
  if (trace && args.Has("--trace")) {
    std::fprintf(stderr, "trace %s\n", tracing::Hex(trace->trace_id).c_str());
  }
  const char* env = std::getenv("ADMITD_SERVER");
  ConnectionOptions connection =
      ConnectionOptionsFromEnvironment(args.Get("--server", env != nullptr ? env : "localhost:50051"));
  connection.tls = args.Has("--tls");
  connection.follow_leader = args.Has("--follow-leader");
  connection.ca_file = args.Get("--ca-file", connection.ca_file);
  connection.cert_file = args.Get("--cert-file", connection.cert_file);
  connection.key_file = args.Get("--key-file", connection.key_file);
  connection.server_name = args.Get("--server-name");
  if (args.Has("--token-file")) {
    connection.token_file = args.Get("--token-file");
    connection.token.clear();
  }
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = Connect(connection);
  if (!channel.ok()) return Usage(std::string(channel.status().message()));
  Client client(*std::move(channel));
  if (cmd == "apply") return Apply(client, args);
  if (cmd == "submit") return SubmitFiles(client, args);
  if (cmd == "import") return Import(client, args);
  if (cmd == "get") return Get(client, args);
  if (cmd == "delete") return Delete(client, args);
  if (cmd == "admit") return Admit(client, args, /*explain=*/false);
  if (cmd == "explain") return Admit(client, args, /*explain=*/true);
  if (cmd == "release") return Release(client, args);
  if (cmd == "watch") return Watch(client, args);
  if (cmd == "events") return Events(client, args);
  if (cmd == "audit") return Audit(client, args);
  if (cmd == "cycles") return Cycles(client, args);
  if (cmd == "deactivate") return SetActive(client, args, false);
  if (cmd == "activate") return SetActive(client, args, true);
  if (cmd == "check") return Check(client, args);
  if (cmd == "resize") return Resize(client, args);
  if (cmd == "directives") return Directives(client, args);
  return Usage(absl::StrCat("command ", cmd, " is listed but not handled"));
}

}  // namespace
}  // namespace admitd::clients

int main(int argc, char** argv) { return admitd::clients::Run(argc, argv); }
