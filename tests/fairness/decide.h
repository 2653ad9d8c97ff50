// Runs one decision of a named policy on a test snapshot.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fairness/policy.h"
#include "state_builder.h"

namespace allox::testing {

inline Decision decide_once(const std::string& policy, StateBuilder& b,
                            const PolicyOptions& options = {}) {
  auto made = make_policy(policy, options);
  EXPECT_TRUE(made.ok()) << made.message();
  if (!made.ok()) return {};
  auto decision = (*made)->decide(b.state());
  EXPECT_TRUE(decision.ok()) << decision.message();
  return decision.ok() ? *decision : Decision{};
}

}  // namespace allox::testing
