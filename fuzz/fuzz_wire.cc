// The extender wire parser (extender_api/wire.h) on arbitrary bytes. Every parser returns a value or
// an Error, never throws or crashes; what it accepts renders back (render(), the one renderer),
// and a rendered value parses again to the same text byte for byte (the round trip alloxd's
// clients rely on).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "extender_api/wire.h"

namespace {

using namespace allox::extender;

[[noreturn]] void fail(const char* what, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "fuzz_wire: %s\n  first:  %s\n  second: %s\n", what, a.c_str(), b.c_str());
  std::abort();
}

// parse(render(value)) renders the same again.
template <typename Parse, typename Value>
void round_trip(const char* what, Parse parse, const Value& value) {
  const std::string rendered = render(value);
  auto again = parse(rendered);
  if (!again) fail(what, rendered, again.message());
  const std::string rerendered = render(*again);
  if (rerendered != rendered) fail(what, rendered, rerendered);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);

  auto args = parse_extender_args(body);
  if (args) {
    round_trip(
        "ExtenderArgs round trip", [](std::string_view text) { return parse_extender_args(text); },
        *args);
  }
  // The request path reads only the pod's scheduling fields: it must accept and refuse the same
  // bodies, with the same message, and see the same candidate nodes.
  auto read = parse_extender_args(body, PodFields::kRead);
  if (args.ok() != read.ok()) fail("PodFields::kRead disagrees", args.message(), read.message());
  if (!args && args.message() != read.message()) {
    fail("PodFields::kRead error differs", args.message(), read.message());
  }
  if (args && args->candidates() != read->candidates()) {
    fail("PodFields::kRead candidates differ", render(*args), render(*read));
  }
  if (auto result = parse_filter_result(body)) {
    round_trip("FilterResult round trip", parse_filter_result, *result);
  }
  if (auto priorities = parse_host_priorities(body)) {
    round_trip("HostPriorityList round trip", parse_host_priorities, *priorities);
  }
  if (auto binding = parse_binding_args(body)) {
    round_trip("ExtenderBindingArgs round trip", parse_binding_args, *binding);
  }
  if (auto binding = parse_binding_result(body)) {
    round_trip("ExtenderBindingResult round trip", parse_binding_result, *binding);
  }
  (void)parse_preemption_args(body);
  if (auto preemption = parse_preemption_result(body)) {
    round_trip("ExtenderPreemptionResult round trip", parse_preemption_result, *preemption);
  }
  if (auto value = parse_json_body(body); value && value->is_object()) {
    (void)find_key(*value, "Pod");
  }
  return 0;
}
