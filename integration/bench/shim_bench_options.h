// shim_bench's command line: its flags (the kinds of objects to create among them), their
// defaults and its usage text.
//
//   ShimBenchOptions o;
//   if (std::string error; !ParseShimBenchOptions(argc, argv, &o, &error)) ... kShimBenchUsage ...
//
// Thread safety: pure functions and constants.
#ifndef ADMITD_INTEGRATION_BENCH_SHIM_BENCH_OPTIONS_H_
#define ADMITD_INTEGRATION_BENCH_SHIM_BENCH_OPTIONS_H_

#include <string>
#include <vector>

#include "integration/bench/shim_bench_kinds.h"

namespace admitd::bench {

struct ShimBenchOptions {
  int jobs = 1000;  // objects created (and Workloads submitted directly)
  int threads = 8;
  double timeout_s = 300;
  std::vector<const BenchKind*> kinds;  // object i is of kind kinds[i % kinds.size()]
  bool keep_logs = false;
  std::string admitd, shim;  // default: the binaries built with the bench
  std::string python = "/usr/bin/python3";
  std::vector<std::string> apiserver_args;
  std::vector<std::string> shim_args;
};

extern const char kShimBenchUsage[];

// Fills `*o` from the command line (defaults first); false on a bad one, with `*error` saying
// what (or empty: the usage says enough).
bool ParseShimBenchOptions(int argc, char** argv, ShimBenchOptions* o, std::string* error);

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_SHIM_BENCH_OPTIONS_H_
