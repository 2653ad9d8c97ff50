#include "fairness/policy.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "fairness/policies.h"
#include "matcher/matcher.h"

namespace allox {
namespace {

struct PolicyEntry {
  const char* name;
  std::function<std::unique_ptr<SchedulingPolicy>(const PolicyOptions&)> make;
};

const std::vector<PolicyEntry>& registry() {
  static const std::vector<PolicyEntry> entries = {
      {"allox", [](const PolicyOptions& o) { return make_allox_policy(o); }},
      {"fifo", [](const PolicyOptions&) { return make_fifo_policy(); }},
      {"sjf", [](const PolicyOptions&) { return make_sjf_policy(); }},
      {"drf", [](const PolicyOptions& o) { return make_drf_policy(o); }},
      {"drf-ext", [](const PolicyOptions&) { return make_drf_ext_policy(); }},
      {"drffifo", [](const PolicyOptions& o) { return make_drffifo_policy(o); }},
      {"es", [](const PolicyOptions& o) { return make_equal_share_policy(o.es_pick); }},
      {"srpt", [](const PolicyOptions& o) { return make_srpt_policy(o.srpt_rank); }},
      {"las", [](const PolicyOptions& o) { return make_las_policy(o); }},
      {"maxmin", [](const PolicyOptions&) { return make_maxmin_policy(); }},
      // allox's earlier variants of es and drf-ext, under names that say what they do.
      {"es-fastest", [](const PolicyOptions&) { return make_equal_share_fastest_policy(); }},
      {"drf-ext-fastest", [](const PolicyOptions&) { return make_drf_ext_fastest_policy(); }},
  };
  return entries;
}

Status validate(const PolicyOptions& options) {
  if (!(options.alpha > 0 && options.alpha <= 1)) {
    return Error{"alpha must be in (0, 1], got " + std::to_string(options.alpha)};
  }
  if (!(options.starvation_bound > 0) || std::isnan(options.starvation_bound)) {
    return Error{"starvation_bound must be > 0 seconds, got " +
                 std::to_string(options.starvation_bound)};
  }
  if (!(options.usage_window > 0) || std::isnan(options.usage_window)) {
    return Error{"usage_window must be > 0 seconds, got " + std::to_string(options.usage_window)};
  }
  if (!std::is_sorted(options.las_queue_thresholds.begin(), options.las_queue_thresholds.end()) ||
      std::any_of(options.las_queue_thresholds.begin(), options.las_queue_thresholds.end(),
                  [](double t) { return !(t > 0); })) {
    return Error{"las_queue_thresholds must be positive and ascending"};
  }
  if (auto backend = matcher::parse_backend(options.matcher_backend); !backend.ok()) {
    return Error{"matcher_backend: " + backend.message()};
  }
  if (!(options.las_promotion_factor > 0)) {
    return Error{"las_promotion_factor must be > 0, got " +
                 std::to_string(options.las_promotion_factor)};
  }
  return OkStatus();
}

}  // namespace

Expected<std::unique_ptr<SchedulingPolicy>> make_policy(const std::string& name,
                                                        const PolicyOptions& options) {
  if (Status valid = validate(options); !valid) return valid.error();
  for (const PolicyEntry& entry : registry()) {
    if (name == entry.name) return entry.make(options);
  }
  std::string known;
  for (const std::string& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  return Error{"unknown policy '" + name + "' (known: " + known + ")"};
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const PolicyEntry& entry : registry()) names.push_back(entry.name);
  return names;
}

}  // namespace allox
