# Finds every third-party library allox uses. A missing one stops configuration with the name of
# the Debian package that provides it (scripts/install-deps.sh installs them all).

function(allox_require found what debian_package)
  if(NOT ${found})
    message(FATAL_ERROR "allox needs ${what}: install the Debian package '${debian_package}' "
                        "(or run scripts/install-deps.sh)")
  endif()
endfunction()

find_package(Threads REQUIRED)
# OpenSSL (libssl-dev): TLS to the API server (kube/) and alloxd's HTTPS listener, both through
# Boost.Asio's ssl.
find_package(OpenSSL REQUIRED)

# LEMON ships a CMake config but its imported target differs across releases: find it by hand.
find_path(LEMON_INCLUDE_DIR lemon/network_simplex.h)
find_library(LEMON_LIBRARY NAMES emon lemon)
allox_require(LEMON_INCLUDE_DIR "LEMON (lemon/network_simplex.h)" liblemon-dev)
allox_require(LEMON_LIBRARY "LEMON (libemon)" liblemon-dev)
add_library(allox::lemon INTERFACE IMPORTED)
target_include_directories(allox::lemon SYSTEM INTERFACE ${LEMON_INCLUDE_DIR})
target_link_libraries(allox::lemon INTERFACE ${LEMON_LIBRARY})

find_path(GLPK_INCLUDE_DIR glpk.h)
find_library(GLPK_LIBRARY glpk)
allox_require(GLPK_INCLUDE_DIR "GLPK (glpk.h)" libglpk-dev)
allox_require(GLPK_LIBRARY "GLPK (libglpk)" libglpk-dev)
add_library(allox::glpk INTERFACE IMPORTED)
target_include_directories(allox::glpk SYSTEM INTERFACE ${GLPK_INCLUDE_DIR})
target_link_libraries(allox::glpk INTERFACE ${GLPK_LIBRARY})

find_path(BOOST_GRAPH_INCLUDE_DIR boost/graph/successive_shortest_path_nonnegative_weights.hpp)
allox_require(BOOST_GRAPH_INCLUDE_DIR "Boost Graph" libboost-graph-dev)
add_library(allox::boost_graph INTERFACE IMPORTED)
target_include_directories(allox::boost_graph SYSTEM INTERFACE ${BOOST_GRAPH_INCLUDE_DIR})

# Boost.Beast and Asio (header-only) serve alloxd's HTTP(S).
find_path(BOOST_BEAST_INCLUDE_DIR boost/beast/http.hpp)
allox_require(BOOST_BEAST_INCLUDE_DIR "Boost.Beast" libboost-dev)
add_library(allox::boost_beast INTERFACE IMPORTED)
target_include_directories(allox::boost_beast SYSTEM INTERFACE ${BOOST_BEAST_INCLUDE_DIR})

# RapidJSON (header-only): the SAX reader under extender_api/wire.cc's one-pass readers.
find_path(RAPIDJSON_INCLUDE_DIR rapidjson/reader.h)
allox_require(RAPIDJSON_INCLUDE_DIR "RapidJSON" rapidjson-dev)
add_library(allox::rapidjson INTERFACE IMPORTED)
target_include_directories(allox::rapidjson SYSTEM INTERFACE ${RAPIDJSON_INCLUDE_DIR})

find_package(yaml-cpp QUIET)
allox_require(yaml-cpp_FOUND "yaml-cpp" libyaml-cpp-dev)

find_package(nlohmann_json 3 QUIET)
allox_require(nlohmann_json_FOUND "nlohmann/json" nlohmann-json3-dev)

find_package(spdlog QUIET)
allox_require(spdlog_FOUND "spdlog" libspdlog-dev)

find_package(CLI11 QUIET)
allox_require(CLI11_FOUND "CLI11" libcli11-dev)

find_package(cpprestsdk QUIET)
allox_require(cpprestsdk_FOUND "cpprestsdk" libcpprest-dev)

find_package(SQLite3 QUIET)
allox_require(SQLite3_FOUND "SQLite 3" libsqlite3-dev)

find_package(GTest QUIET)
allox_require(GTest_FOUND "GoogleTest" "googletest libgtest-dev libgmock-dev")

find_package(benchmark QUIET)
allox_require(benchmark_FOUND "Google Benchmark" libbenchmark-dev)
