# Helpers shared by every module's CMakeLists.txt.

# Warnings apply to project code only; third-party headers are included as SYSTEM.
# -Werror is for the project's own developers (./dev and CI turn ALLOX_WERROR on): a packager's
# or the container image's compiler and flags may warn where ours do not, and a warning must
# not stop a build that ships.
option(ALLOX_WERROR "Treat compiler warnings as errors (on in ./dev and CI)" OFF)
# g++ 12 at -O3 (Release) reports a false -Wrestrict inside libstdc++'s inlined
# operator+(const char*, std::string&&) for the everyday `"j" + std::to_string(i)` (GCC bug
# 105651, fixed in GCC 13): seen in extender_api/wire.cc, bench/matcher_bench.cc and tests/matcher.
# Only that warning, only for g++ < 13, only in Release, is off.
set(ALLOX_GCC12_O3_RESTRICT
    $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>,$<CONFIG:Release>>:-Wno-restrict>)
function(allox_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra $<$<BOOL:${ALLOX_WERROR}>:-Werror>
                                           ${ALLOX_GCC12_O3_RESTRICT})
endfunction()

# allox_library(NAME SOURCES ... DEPS ...): a static library allox_NAME with the repository
# root on its include path, so headers are included as "core/model.h".
function(allox_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(allox_${name} STATIC ${ARG_SOURCES})
  target_include_directories(allox_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(allox_${name} PUBLIC ${ARG_DEPS})
  allox_warnings(allox_${name})
endfunction()

# allox_test(NAME SOURCES ... DEPS ... [LABEL unit|integration|e2e]): a GoogleTest binary whose
# cases ctest lists one by one, each with the binary's label (default unit), so `ctest -L unit`
# is the fast subset. Tests find shipped data through ALLOX_SOURCE_DIR.
#   unit         in one process, no child process, seconds in all
#   integration  starts alloxd, servers or tools (kubectl, chromium) and talks to them
#   e2e          a whole cluster: fake API server, kube-scheduler emulator, kubelets, alloxd
function(allox_test name)
  cmake_parse_arguments(ARG "" "LABEL" "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name} PRIVATE ALLOX_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                             ALLOX_BINARY_DIR="${PROJECT_BINARY_DIR}")
  allox_warnings(${name})
  include(GoogleTest)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300 LABELS ${ARG_LABEL})
endfunction()

# allox_script_test(NAME LABEL COMMAND ...): a test that runs a script, with its label.
function(allox_script_test name label)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS ${label})
endfunction()
