#include "integration/bench/shim_bench_options.h"

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace admitd::bench {

const char kShimBenchUsage[] =
    "usage: shim_bench [--jobs N] [--kinds LIST] [--threads N] [--timeout SECONDS]\n"
    "  --jobs N             objects created at once, and Workloads submitted (default 1000)\n"
    "  --kinds LIST         the kinds created, in turn (comma-separated; default job): job,\n"
    "                       jobset, pytorchjob, rayjob, raycluster, deployment, statefulset, or\n"
    "                       all\n"
    "  --threads N          threads creating objects and submitting Workloads (default 8)\n"
    "  --timeout SECONDS    give up after this long, reporting how far the run got (default 300)\n"
    "  --admitd PATH        the admitd binary (default: the one built with this)\n"
    "  --shim PATH          the admitd-shim binary (default: the one built with this)\n"
    "  --python PATH        the interpreter for the test API server (default /usr/bin/python3)\n"
    "  --apiserver-arg ARG  an extra argument for the test API server (repeatable), e.g.\n"
    "                       --apiserver-arg --controllers=job (merged with the kinds' own)\n"
    "  --shim-arg ARG       an extra argument for admitd-shim (repeatable), e.g. --shim-arg "
    "--workers=32\n"
    "  --keep-logs          keep the temporary directory with the processes' logs (its path is\n"
    "                       printed)\n";

bool ParseShimBenchOptions(int argc, char** argv, ShimBenchOptions* o, std::string* error) {
  *o = ShimBenchOptions{};
  o->admitd = ADMITD_BINARY;
  o->shim = ADMITD_SHIM_BINARY;
  std::string kinds = "job";
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (flag == "--keep-logs") {
      o->keep_logs = true;
      continue;
    }
    if (size_t eq = flag.find('='); eq != std::string::npos && flag.rfind("--", 0) == 0) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return false;
    }
    bool ok = true;
    if (flag == "--jobs") {
      ok = absl::SimpleAtoi(value, &o->jobs) && o->jobs > 0;
    } else if (flag == "--kinds") {
      kinds = value;
    } else if (flag == "--threads") {
      ok = absl::SimpleAtoi(value, &o->threads) && o->threads > 0;
    } else if (flag == "--timeout") {
      ok = absl::SimpleAtod(value, &o->timeout_s) && o->timeout_s > 0;
    } else if (flag == "--admitd") {
      o->admitd = value;
    } else if (flag == "--shim") {
      o->shim = value;
    } else if (flag == "--python") {
      o->python = value;
    } else if (flag == "--apiserver-arg") {
      o->apiserver_args.push_back(value);
    } else if (flag == "--shim-arg") {
      o->shim_args.push_back(value);
    } else {
      ok = false;
    }
    if (!ok) return false;
  }
  absl::StatusOr<std::vector<const BenchKind*>> parsed = ParseKinds(kinds);
  if (!parsed.ok()) {
    *error = absl::StrCat("--kinds: ", parsed.status().message());
    return false;
  }
  o->kinds = *std::move(parsed);
  return true;
}

}  // namespace admitd::bench
