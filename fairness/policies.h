// Factories for each policy behind make_policy() (fairness/policy.h). Internal to fairness/:
// callers outside the module use make_policy(name, options), which validates the options.
#pragma once

#include <memory>

#include "fairness/policy.h"

namespace allox {

std::unique_ptr<SchedulingPolicy> make_fifo_policy();
std::unique_ptr<SchedulingPolicy> make_sjf_policy();
std::unique_ptr<SchedulingPolicy> make_drf_policy(const PolicyOptions& options);
std::unique_ptr<SchedulingPolicy> make_drf_ext_policy();
std::unique_ptr<SchedulingPolicy> make_drf_ext_fastest_policy();
std::unique_ptr<SchedulingPolicy> make_drffifo_policy(const PolicyOptions& options);
std::unique_ptr<SchedulingPolicy> make_equal_share_policy(EsPick pick);
std::unique_ptr<SchedulingPolicy> make_equal_share_fastest_policy();
std::unique_ptr<SchedulingPolicy> make_srpt_policy(SrptRank rank);
std::unique_ptr<SchedulingPolicy> make_las_policy(const PolicyOptions& options);
std::unique_ptr<SchedulingPolicy> make_maxmin_policy();
std::unique_ptr<SchedulingPolicy> make_allox_policy(const PolicyOptions& options);

}  // namespace allox
