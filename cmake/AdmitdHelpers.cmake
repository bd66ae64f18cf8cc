# One helper per kind of target, so each folder's CMakeLists.txt reads as a declaration.
#
#   admitd_library(NAME SRCS a.cc b.cc DEPS lib...)
#   admitd_test(NAME SRCS a_test.cc DEPS lib... [LABELS l...])   # GoogleTest, registered in CTest
#   admitd_bench(NAME SRCS a_bench.cc DEPS lib...)                # Google Benchmark, not in CTest
#   admitd_fuzzer(NAME SRCS a_fuzz.cc DEPS lib...)                # libFuzzer (ADMITD_FUZZ=ON only)
#
# Tests without the label `integration` also get the label `unit` and belong to the `unit_tests`
# target, which a sanitizer build builds instead of everything.

set(ADMITD_WARNINGS -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)

function(admitd_library name)
  cmake_parse_arguments(A "" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${A_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${ADMITD_WARNINGS})
  target_link_libraries(${name} PUBLIC ${A_DEPS})
endfunction()

function(admitd_test name)
  cmake_parse_arguments(A "" "" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${A_SRCS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${ADMITD_WARNINGS})
  target_link_libraries(${name} PRIVATE ${A_DEPS} GTest::gmock GTest::gtest_main)
  if(NOT "integration" IN_LIST A_LABELS)
    list(APPEND A_LABELS unit)
    set_property(GLOBAL APPEND PROPERTY ADMITD_UNIT_TESTS ${name})
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${A_LABELS}")
endfunction()

function(admitd_bench name)
  cmake_parse_arguments(A "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${A_SRCS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${ADMITD_WARNINGS})
  target_link_libraries(${name} PRIVATE ${A_DEPS} benchmark::benchmark)
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
