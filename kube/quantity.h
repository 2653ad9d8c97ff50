// Kubernetes resource quantities (k8s.io/apimachinery resource.Quantity) read as numbers:
// "500m" is 0.5, "8" is 8, "32Gi" is 32·2^30, "1e3" is 1000. Binary (Ki..Ei) and decimal
// (n, u, m, k..E) suffixes; no negative values (requests and capacities are never negative).
//
// Errors: a text that is not a quantity, quoted in the message. Thread-safe: a pure function.
#pragma once

#include <string_view>

#include "core/result.h"

namespace allox::kube {

// The quantity `text` in base units (cores, bytes, devices).
Expected<double> parse_quantity(std::string_view text);

}  // namespace allox::kube
