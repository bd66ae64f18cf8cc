#include "clients/admitctl_flags.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace admitd::clients {
namespace {

// The commands as --help lists them. A synopsis of several lines is written with "\n"; the help
// starts beside its last line, or below it when the synopsis is too wide.
const std::vector<CommandHelp>& Commands() {
  static const std::vector<CommandHelp> kCommands = {
      {"apply", "apply -f FILE|DIR|- [-f ...]",
       "create or update queue objects; submit Workload documents"},
      {"submit", "submit -f FILE", "submit Workload manifests"},
      {"import", "import -f FILE [--cluster NAME]",
       "record Workloads admitted by a running Kueue (with their status) as admitted, without "
       "scheduling them; workloads Kueue made for pods become pod Workloads of --cluster"},
      {"get", "get KIND [NAME] [-n NS | -A] [-o json]", ""},  // the kinds, added below
      {"delete", "delete KIND NAME [-n NS]", ""},
      {"admit", "admit NAME [-n NS] [--wait] [--timeout 30s]", ""},
      {"explain", "explain NAME [-n NS]",
       "why a workload is pending, and what the next attempt would do"},
      {"release",
       "release NAME [-n NS] --finished[=succeeded|failed] | --stopped | --reclaimable PODSET=N,...",
       ""},
      {"resize",
       "resize NAME [-n NS] --count PODSET=N [--count ...] [--generation G]\n"
       "resize --job-uid UID [--job-kind Job --job-name NAME --job-api-version batch/v1] [-n NS]\n"
       "       --count PODSET=N [--count ...] [--generation G]",
       "change a job's pod counts: in place (scale-down, or not admitted yet), or a new workload "
       "slice (scale-up of an admitted elastic job; needs the job's new generation)"},
      {"deactivate", "deactivate NAME [-n NS]",
       "set spec.active=false (evicts a workload holding quota)"},
      {"activate", "activate NAME [-n NS]", "set spec.active=true (requeues it)"},
      {"check",
       "check NAME CHECK STATE [-n NS] [--message TEXT] [--requeue-after SECONDS]",
       "report an admission check: Pending, Ready, Retry, Rejected"},
      {"directives", "directives --cluster NAME",
       "what a pod shim of that cluster must still do (UNGATE, DELETE, REMOVE_FINALIZER), per "
       "pod"},
      {"events", "events [NAME] [-n NS | -A] [-w]",
       "the events recorded on workloads (Kueue's types, reasons and messages), oldest first; "
       "-w keeps following"},
      {"audit", "audit [-w]",
       "the audit trail: who applied, deleted or imported what, and when, oldest first (as far "
       "as the event log reaches)"},
      {"watch", "watch [--since REV] [--kind KIND] [-n NS]",
       "follow the changes of objects after revision REV (of one kind, in one namespace)"},
      {"cycles", "cycles [N] [--advance SECONDS]",
       "run N scheduling cycles (with --manual-scheduling); with --manual-clock, move the clock "
       "forward first"},
      {"version", "version", "admitctl's version and the API it speaks"},
  };
  return kCommands;
}

// Each kind: its name, its plural, and the short names and aliases that mean it too.
struct KindNames {
  v1::ObjectKind kind;
  const char* name;
  const char* plural;
  std::vector<const char*> aliases;
};

const std::vector<KindNames>& Kinds() {
  static const std::vector<KindNames> kKinds = {
      {v1::OBJECT_KIND_RESOURCE_FLAVOR, "resourceflavor", "resourceflavors", {"rf", "flavor", "flavors"}},
      {v1::OBJECT_KIND_COHORT, "cohort", "cohorts", {}},
      {v1::OBJECT_KIND_CLUSTER_QUEUE, "clusterqueue", "clusterqueues", {"cq"}},
      {v1::OBJECT_KIND_LOCAL_QUEUE, "localqueue", "localqueues", {"lq"}},
      {v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS, "workloadpriorityclass", "workloadpriorityclasses",
       {"wpc"}},
      {v1::OBJECT_KIND_ADMISSION_CHECK, "admissioncheck", "admissionchecks", {"ac"}},
      {v1::OBJECT_KIND_MULTIKUEUE_CONFIG, "multikueueconfig", "multikueueconfigs", {}},
      {v1::OBJECT_KIND_MULTIKUEUE_CLUSTER, "multikueuecluster", "multikueueclusters", {"mkc"}},
      {v1::OBJECT_KIND_NAMESPACE, "namespace", "namespaces", {"ns"}},
      {v1::OBJECT_KIND_WORKLOAD, "workload", "workloads", {"wl"}},
      {v1::OBJECT_KIND_EVENT, "event", "events", {"ev"}},
  };
  return kKinds;
}

// "resourceflavor(s)/rf/flavor(s), cohort(s), ...": each kind's names, plurals folded in.
std::string KindList() {
  auto fold = [](const std::string& one, const std::string& many) {
    if (many == one + "s") return absl::StrCat(one, "(s)");
    if (many == one + "es") return absl::StrCat(one, "(es)");
    return absl::StrCat(one, "/", many);
  };
  std::vector<std::string> kinds;
  for (const KindNames& k : Kinds()) {
    std::string names = fold(k.name, k.plural);
    for (size_t i = 0; i < k.aliases.size(); ++i) {
      const std::string alias = k.aliases[i];
      if (i + 1 < k.aliases.size() && k.aliases[i + 1] == alias + "s") {
        absl::StrAppend(&names, "/", fold(alias, k.aliases[++i]));
      } else {
        absl::StrAppend(&names, "/", alias);
      }
    }
    kinds.push_back(std::move(names));
  }
  return absl::StrJoin(kinds, ", ");
}

// `text` in lines of at most `width` characters, each but the first indented by `indent`.
std::string Wrap(const std::string& text, size_t indent, size_t width) {
  std::string out;
  size_t line = 0;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (line > 0 && line + 1 + word.size() > width) {
      absl::StrAppend(&out, "\n", std::string(indent, ' '));
      line = 0;
    } else if (line > 0) {
      out += ' ';
      ++line;
    }
    absl::StrAppend(&out, word);
    line += word.size();
  }
  return out;
}

constexpr char kEnvironment[] = R"(
Environment: $ADMITD_SERVER, $ADMITD_CA_FILE, $ADMITD_CERT_FILE, $ADMITD_KEY_FILE,
$ADMITD_TOKEN_FILE (or the token itself in $ADMITD_TOKEN) stand in for the flags of the same
meaning; $TRACEPARENT, a W3C traceparent, makes the calls part of that trace.
Exit codes: 0 ok, 1 the server refused or failed, 2 bad usage or manifest.
)";

}  // namespace

const std::vector<CommandHelp>& AdmitctlCommands() { return Commands(); }

v1::ObjectKind KindFromName(const std::string& name) {
  for (const KindNames& k : Kinds()) {
    if (name == k.name || name == k.plural) return k.kind;
    for (const char* alias : k.aliases) {
      if (name == alias) return k.kind;
    }
  }
  return v1::OBJECT_KIND_UNSPECIFIED;
}

std::string UnknownCommand(const std::string& name) {
  std::vector<std::string> known;
  for (const CommandHelp& c : Commands()) known.push_back(c.name);
  std::string message = absl::StrCat("unknown command \"", name, "\"");
  if (std::string closest = settings::Closest(name, known); !closest.empty()) {
    absl::StrAppend(&message, "; did you mean \"", closest, "\"?");
  }
  return message;
}

std::string Args::Get(const std::string& flag, const std::string& def) const {
  auto it = flags.find(flag);
  return it == flags.end() || it->second.empty() || it->second.back().empty() ? def
                                                                              : it->second.back();
}

settings::Table AdmitctlFlags(Args* args) {
  settings::Table t("admitctl");
  // Records each value under `name`; a switch given =false is as if not given.
  auto record = [args](std::string name, bool is_switch) -> settings::Parser {
    return [args, name = std::move(name), is_switch](const std::string& value) {
      if (is_switch && value == "false") {
        args->flags.erase(name);
      } else {
        args->flags[name].push_back(value);
      }
      return absl::OkStatus();
    };
  };
  // A flag taking a value, and a switch.
  auto value = [&](std::string flag, std::string name, std::string placeholder, std::string help,
                   std::string def = "", bool repeatable = false) {
    t.Add({.flag = std::move(flag),
           .value = std::move(placeholder),
           .help = std::move(help),
           .default_text = std::move(def),
           .repeatable = repeatable,
           .parse = record(std::move(name), false)});
  };
  auto flag = [&](std::string flag, std::string name, std::string help) {
    t.Add({.flag = std::move(flag),
           .help = std::move(help),
           .switch_value = "true",
           .parse = record(std::move(name), true)});
  };
  value("--server", "--server", "HOST:PORT",
        "admitd's gRPC address, or an HA group's replicas as HOST:PORT,HOST:PORT,... "
        "($ADMITD_SERVER)",
        "localhost:50051");
  flag("--follow-leader", "--follow-leader",
       "send calls to the leader among the addresses --server resolves to (implied by a list)");
  value("-f,--filename", "-f", "FILE|DIR|-",
        "manifests to apply, submit or import (a directory: its .yaml, .yml and .json files; "
        "-: standard input)",
        "", /*repeatable=*/true);
  value("-n,--namespace", "-n", "NS", "the namespace", "default");
  flag("-A,--all-namespaces", "-A", "every namespace (get, events)");
  value("-o,--output", "-o", "json", "print the objects as JSON documents (get)");
  flag("-w,--watch", "-w", "keep following new records (events, audit)");
  flag("--wait", "--wait", "block until the workload is admitted (admit)");
  value("--timeout", "--timeout", "DURATION", "how long --wait waits (admit)", "30s");
  t.Add({.flag = "--finished",
         .value = "succeeded|failed",
         .help = "the workload finished (release)",
         .switch_value = "succeeded",
         .parse = record("--finished", false)});
  flag("--stopped", "--stopped",
       "the job stopped after an eviction: its quota goes back (release)");
  value("--reclaimable", "--reclaimable", "PODSET=N,...",
        "pods that ended and give their quota back (release)");
  value("--count", "--count", "PODSET=N", "a pod set's new count (resize)", "", true);
  value("--generation", "--generation", "G",
        "the job's new metadata.generation, which names a scale-up's slice (resize)");
  value("--job-uid", "--job-uid", "UID", "find the workload by its job's uid (resize)");
  value("--job-kind", "--job-kind", "KIND", "the job's kind (resize --job-uid)", "Job");
  value("--job-name", "--job-name", "NAME", "the job's name (resize --job-uid)");
  value("--job-api-version", "--job-api-version", "VERSION",
        "the job's apiVersion (resize --job-uid)", "batch/v1");
  value("--message", "--message", "TEXT", "the admission check's message (check)");
  value("--requeue-after", "--requeue-after", "SECONDS",
        "with Retry: when the workload may be tried again (check)");
  value("--cluster", "--cluster", "NAME",
        "the cluster whose pods made imported pod workloads (import), or whose directives to "
        "list (directives)");
  value("--since", "--since", "REV", "resume after this revision (watch)");
  value("--kind", "--kind", "KIND", "only changes of this kind (watch)");
  value("--advance", "--advance", "SECONDS",
        "move the server's manual clock forward first (cycles)");
  flag("--tls", "--tls", "TLS with the system's CAs (implied by the four flags below)");
  value("--ca-file", "--ca-file", "FILE",
        "the CA bundle for the server's certificate ($ADMITD_CA_FILE)");
  value("--cert-file", "--cert-file", "FILE", "a client certificate for mTLS ($ADMITD_CERT_FILE)");
  value("--key-file", "--key-file", "FILE", "the client certificate's key ($ADMITD_KEY_FILE)");
  value("--server-name", "--server-name", "NAME", "the name expected in the server's certificate");
  value("--token-file", "--token-file", "FILE",
        "a bearer token, e.g. an OIDC ID token ($ADMITD_TOKEN_FILE, or the token itself in "
        "$ADMITD_TOKEN)");
  flag("--trace", "--trace",
       "record this command's calls in a new sampled trace and print its id on stderr");
  return t;
}

absl::StatusOr<Args> ParseArgs(const std::vector<std::string>& argv) {
  Args args;
  absl::StatusOr<settings::CommandLine> line =
      AdmitctlFlags(&args).Parse(argv, /*positional_allowed=*/true);
  if (!line.ok()) return line.status();
  args.positional = std::move(line->positional);
  args.help = line->help;
  return args;
}

std::string AdmitctlUsage() {
  constexpr size_t kHelpColumn = 36, kWidth = 100;  // as the flags' help
  std::string out = "usage: admitctl [flags] COMMAND ...\n\nCommands:\n";
  for (const CommandHelp& c : Commands()) {
    std::vector<std::string> lines = absl::StrSplit(c.synopsis, '\n');
    for (size_t i = 0; i + 1 < lines.size(); ++i) absl::StrAppend(&out, "  ", lines[i], "\n");
    std::string help = c.name == "get" ? absl::StrCat("kinds: ", KindList()) : c.help;
    absl::StrAppend(&out, "  ", lines.back());
    if (help.empty()) {
      out += "\n";
      continue;
    }
    const size_t used = 2 + lines.back().size();
    if (used + 2 > kHelpColumn) {
      absl::StrAppend(&out, "\n", std::string(kHelpColumn, ' '));
    } else {
      out += std::string(kHelpColumn - used, ' ');
    }
    absl::StrAppend(&out, Wrap(help, kHelpColumn, kWidth - kHelpColumn), "\n");
  }
  Args scratch;
  return absl::StrCat(out, "\nFlags:\n", AdmitctlFlags(&scratch).FlagHelp(), kEnvironment);
}

}  // namespace admitd::clients
