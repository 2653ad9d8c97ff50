// The planner's cluster file (core/cluster_file.h) on arbitrary YAML or JSON text. Nothing may
// throw or crash. An accepted cluster holds what its header promises: at least one and at most
// kMaxClusterDevices machines, unique non-empty UTF-8 names, a device type each, busy_until
// finite in [0, kMaxInputSeconds], and no node larger than kMaxUnits devices of a type.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "core/cluster_file.h"
#include "core/model.h"
#include "core/utf8.h"

namespace {

using namespace allox;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_cluster: accepted cluster breaks: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto cluster = parse_cluster(text, "fuzz.yaml");
  if (!cluster) {
    if (cluster.message().empty()) fail("an error without a message");
    return 0;
  }
  const auto& machines = cluster->machines;
  if (machines.empty() || machines.size() > kMaxClusterDevices) fail("machine count");
  std::set<std::string> names;
  for (const Machine& machine : machines) {
    if (machine.name.empty() || !names.insert(machine.name).second) fail("name empty or repeated");
    if (!is_utf8_text(machine.name) || !is_utf8_text(machine.node)) fail("name not UTF-8 text");
    if (machine.device.empty()) fail("machine without a device type");
    if (!std::isfinite(machine.busy_until) || machine.busy_until < 0 ||
        machine.busy_until > kMaxInputSeconds) {
      fail("busy_until outside [0, kMaxInputSeconds]");
    }
  }
  for (const auto& [device, units] : largest_node_units(machines)) {
    if (units < 1 || units > kMaxUnits) fail("a node outside 1..kMaxUnits units");
  }
  return 0;
}
