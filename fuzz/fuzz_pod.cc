// The pod reader (alloxd/model/pod.h) on arbitrary JSON: the whole document, or its `Pod` member
// when it is an ExtenderArgs body, is read as a job variant, and the raw bytes as a quantity.
// Nothing may throw or crash (UBSan aborts on an out-of-range conversion too), and an accepted
// variant holds what the scheduler assumes: a name, a job id, a user, a device, and hints and
// iterations that are positive and finite.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "alloxd/config.h"
#include "alloxd/model/pod.h"
#include "extender_api/wire.h"
#include "kube/quantity.h"

namespace {

using namespace allox::extender;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_pod: accepted variant breaks: %s\n", what);
  std::abort();
}

void read(const nlohmann::json& pod, const DeviceMapping& mapping) {
  (void)pod_identity(pod);
  auto variant = read_job_variant(pod, mapping);
  if (!variant) return;
  if (variant->pod.name.empty()) fail("empty pod name");
  if (variant->pod.namespace_name.empty()) fail("empty namespace");
  if (variant->job_id.empty()) fail("empty job id");
  if (variant->user.empty()) fail("empty user");
  if (variant->device.empty()) fail("empty device");
  if (variant->iterations && *variant->iterations < 1) fail("iterations < 1");
  for (const auto& [device, seconds] : variant->time_hints) {
    if (!(seconds > 0) || !std::isfinite(seconds)) fail("time hint not positive and finite");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (size <= 64) {
    auto quantity = allox::kube::parse_quantity(text);
    if (quantity && !(*quantity >= 0)) fail("negative or NaN quantity");
  }
  static const DeviceMapping mapping = [] {
    DeviceMapping m;
    m.resources = {{"nvidia.com/gpu", "gpu"}, {"google.com/tpu", "tpu"}};
    return m;
  }();
  auto value = parse_json_body(text);
  if (!value) return 0;
  read(*value, mapping);
  if (value->is_object()) {
    if (const nlohmann::json* pod = find_key(*value, "Pod")) read(*pod, mapping);
  }
  return 0;
}
