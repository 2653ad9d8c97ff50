// A request target ("/v1/jobs/lab%2Fx?limit=10") read as the path a route matches and the query
// it is given. Pure functions over the target's text.
#pragma once

#include <string>
#include <string_view>

namespace allox::extender {

// The path of a request target, without the query string, percent-decoded.
std::string decode_path(std::string_view target);

// The query string of a request target: what follows the first '?', as sent.
std::string query_of(std::string_view target);

}  // namespace allox::extender
