// alloxd's config loader (alloxd/config.h) on arbitrary YAML text. It returns a config or an
// Error naming the key, never throws or crashes; an accepted config holds the ranges the header
// promises (ports 0..65535, alpha in (0, 1], positive tick and estimates).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "alloxd/config.h"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_config: accepted config breaks: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  auto config = allox::extender::parse_extender_config(yaml, "fuzz.yaml");
  if (!config) return 0;
  if (config->listen_port < 0 || config->listen_port > 65535) fail("listen port out of range");
  if (!(config->alpha > 0 && config->alpha <= 1)) fail("alpha outside (0, 1]");
  if (!(config->tick > 0) || !std::isfinite(config->tick)) fail("tick not positive and finite");
  if (!(config->default_job_seconds > 0) || !std::isfinite(config->default_job_seconds)) {
    fail("default_job_seconds not positive and finite");
  }
  if (config->http_threads < 1) fail("http_threads < 1");
  for (const auto& node : config->nodes) {
    if (node.name.empty()) fail("node without a name");
    for (const auto& [device, count] : node.machines) {
      if (count < 0) fail("negative machine count");
    }
  }
  return 0;
}
