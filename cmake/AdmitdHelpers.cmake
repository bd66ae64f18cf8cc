# One helper per kind of target, so each folder's CMakeLists.txt reads as a declaration.
#
#   admitd_library(NAME SRCS a.cc b.cc DEPS lib...)
#   admitd_test(NAME SRCS a_test.cc DEPS lib... [LABELS l...])   # GoogleTest, registered in CTest
#   admitd_bench(NAME SRCS a_bench.cc DEPS lib...)                # Google Benchmark, not in CTest

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
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${A_LABELS}")
endfunction()

function(admitd_bench name)
  cmake_parse_arguments(A "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${A_SRCS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${ADMITD_WARNINGS})
  target_link_libraries(${name} PRIVATE ${A_DEPS} benchmark::benchmark)
endfunction()
