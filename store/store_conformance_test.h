// The behaviour every Store must share, as one parameterized GoogleTest suite
// (store_conformance_test.cc). Each implementation's test binary links the suite and
// instantiates it with a factory:
//
//   INSTANTIATE_TEST_SUITE_P(RocksDb, StoreConformanceTest,
//                            ::testing::Values(StoreFactory{"RocksDb", &RocksDbStore::Open}));
//
// Also the small helpers the implementation-specific tests use. Test-only.
#ifndef ADMITD_STORE_STORE_CONFORMANCE_TEST_H_
#define ADMITD_STORE_STORE_CONFORMANCE_TEST_H_

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "store/store.h"

namespace admitd::store {

struct StoreFactory {
  std::string name;  // the instantiation's parameter name
  std::function<absl::StatusOr<std::unique_ptr<Store>>(const StoreOptions&)> open;
};

// Names the parameter in test output and CTest names (instead of its bytes).
inline void PrintTo(const StoreFactory& factory, std::ostream* os) { *os << factory.name; }

// Hands out fresh directories under testing::TempDir() and removes them when the test ends.
class TempDirs {
 public:
  ~TempDirs();
  // A path that does not exist yet (the store creates it).
  std::string Fresh();

 private:
  std::vector<std::string> made_;
};

class StoreConformanceTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  // Opens a store with `options` on a fresh directory; fails the test (and returns nullptr)
  // when it cannot.
  std::unique_ptr<Store> OpenStore(StoreOptions options = {});

  TempDirs dirs_;
};

// A batch reaching `revision` that puts workload `key` = `value` and logs one event at
// `revision` whose value is "event-<revision>".
Batch PutBatch(uint64_t revision, const std::string& key, const std::string& value);

// Every stored object of `kind`, key to value (fails the test when the store cannot list).
std::map<std::string, std::string> ObjectsOf(const Store& store, v1::ObjectKind kind);

// The revisions of every logged event after `after` (fails the test on an error).
std::vector<uint64_t> EventRevisions(const Store& store, uint64_t after = 0);

}  // namespace admitd::store

#endif  // ADMITD_STORE_STORE_CONFORMANCE_TEST_H_
