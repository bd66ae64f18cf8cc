# One helper per kind of target, so each folder's CMakeLists.txt reads as a declaration.
#
#   admitd_library(NAME SRCS a.cc b.cc DEPS lib...)
#   admitd_test(NAME SRCS a_test.cc... DEPS lib... [LABELS l...]) # GoogleTest, registered in CTest
#   admitd_bench(NAME SRCS a_bench.cc DEPS lib...)                # Google Benchmark, not in CTest
#   admitd_fuzzer(NAME SRCS a_fuzz.cc DEPS lib...)                # libFuzzer (ADMITD_FUZZ=ON only)
#
# Tests without the label `integration` also get the label `unit` and belong to the `unit_tests`
# target, which a sanitizer build builds instead of everything.

# admitd_allocator: linked by the long-running programs (admitd, admitd-shim) and the
# benchmarks. The engine's per-decision objects and gRPC's per-call buffers are many small,
# short-lived blocks, often freed on another thread than the one that allocated them; glibc's
# malloc spent a fifth of admitd's CPU on them at a thousand ClusterQueues
# (docs/performance.md), jemalloc's thread caches and size classes far less. Sanitizer builds
# link nothing here: the sanitizer brings its own allocator.
add_library(admitd_allocator INTERFACE)
if(NOT ADMITD_SANITIZE)
  target_link_libraries(admitd_allocator INTERFACE PkgConfig::JEMALLOC)
  target_sources(admitd_allocator INTERFACE ${PROJECT_SOURCE_DIR}/common/allocator_config.cc)
endif()

set(ADMITD_WARNINGS -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)

# The libraries and the test programs compile as unity builds (ADMITD_UNITY_BUILD, on by default):
# their files are compiled a few at a time as one translation unit, so the gRPC, protobuf,
# GoogleTest and Abseil headers they all include are parsed once per batch instead of once per file
# (docs/testing.md#build-time). A file's internal names (anonymous namespaces, statics) must
# therefore be unique in its target.
# (Not for the generated protobuf code: each .pb.cc defines the same file-level statics.)
function(admitd_unity_build target)
  if(ADMITD_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()

function(admitd_library name)
  cmake_parse_arguments(A "" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${A_SRCS})
  admitd_unity_build(${name})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${ADMITD_WARNINGS})
  target_link_libraries(${name} PUBLIC ${A_DEPS})
endfunction()

# The tests' own code compiles without optimization (the code under test is in the libraries,
# at the build's level), and with one precompiled header: GoogleTest, GoogleMock, the Workload
# protos and the standard and Abseil headers most tests include, parsed once instead of in every
# test. A folder's tests of one kind share one program (one admitd_test with all their files), so
# the unity build can batch them; CTest still runs each test case as its own process. All three
# cut the build's longest part, compiling the tests (docs/testing.md#build-time).
set(ADMITD_TEST_OPTIONS ${ADMITD_WARNINGS} -O0
    $<$<CXX_COMPILER_ID:Clang>:SHELL:-Xclang -fno-pch-timestamp>)
add_library(admitd_test_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch.cc)
target_include_directories(admitd_test_pch PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_options(admitd_test_pch PRIVATE ${ADMITD_TEST_OPTIONS})
target_link_libraries(admitd_test_pch PRIVATE admitd_proto GTest::gmock GTest::gtest)
target_precompile_headers(admitd_test_pch PRIVATE
  <algorithm> <map> <memory> <set> <string> <vector>
  <gmock/gmock.h> <gtest/gtest.h>
  [["absl/status/status.h"]] [["absl/status/statusor.h"]] [["absl/strings/str_cat.h"]]
  [["absl/time/time.h"]] [["admitd/v1/objects.pb.h"]])

function(admitd_test name)
  cmake_parse_arguments(A "" "" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${A_SRCS})
  admitd_unity_build(${name})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${ADMITD_TEST_OPTIONS})
  target_precompile_headers(${name} REUSE_FROM admitd_test_pch)
  # admitd_proto too: the precompiled header holds its Workload messages.
  target_link_libraries(${name} PRIVATE ${A_DEPS} admitd_proto GTest::gmock GTest::gtest_main)
  if(NOT "integration" IN_LIST A_LABELS)
    list(APPEND A_LABELS unit)
    set_property(GLOBAL APPEND PROPERTY ADMITD_UNIT_TESTS ${name})
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${A_LABELS}")
  # gtest_discover_tests passes one label only (a list loses its separators on the way), so a
  # test of several labels gets them all from a file CTest reads after the discovered tests.
  list(LENGTH A_LABELS label_count)
  if(label_count GREATER 1)
    set(labels_file ${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake)
    file(WRITE ${labels_file} "foreach(t IN LISTS ${name}_TESTS)\n"
               "  set_tests_properties(\"\${t}\" PROPERTIES LABELS \"${A_LABELS}\")\n"
               "endforeach()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${labels_file})
  endif()
endfunction()

function(admitd_bench name)
  cmake_parse_arguments(A "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${A_SRCS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${ADMITD_WARNINGS})
  target_link_libraries(${name} PRIVATE ${A_DEPS} benchmark::benchmark admitd_allocator)
endfunction()

# A libFuzzer target, registered in CTest (label `fuzz`) as a bounded run from a copy of its seed
# corpus fuzz/corpus/NAME (see fuzz/run_fuzzer.sh). ADMITD_FUZZ_SECONDS sets the run's length.
function(admitd_fuzzer name)
  cmake_parse_arguments(A "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${A_SRCS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${ADMITD_WARNINGS})
  target_link_libraries(${name} PRIVATE ${A_DEPS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  add_test(NAME ${name}
           COMMAND ${PROJECT_SOURCE_DIR}/fuzz/run_fuzzer.sh $<TARGET_FILE:${name}>
                   ${PROJECT_SOURCE_DIR}/fuzz/corpus/${name} ${ADMITD_FUZZ_SECONDS})
  set_tests_properties(${name} PROPERTIES LABELS fuzz TIMEOUT 600)
  set_property(GLOBAL APPEND PROPERTY ADMITD_FUZZERS ${name})
endfunction()
