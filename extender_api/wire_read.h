// What wire.cc's readers of whole bodies and wire_readers.cc's one-pass readers share: the
// nesting bound, how a field of the wrong type is reported, a node's name, and keys matched
// case-insensitively as Go's decoder matches them. Not a public header.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/result.h"

namespace allox::extender::wire_read {

// nlohmann's parser recurses once per nesting level; a hostile body of a million '[' would
// exhaust the stack. Kubernetes objects nest a dozen levels deep, so 200 is generous.
inline constexpr int kMaxNesting = 200;

// `field: expected <expected>, got <type of got>`.
Error wrong_type(const std::string& field, const char* expected, const nlohmann::json& got);

// The node's name from a v1.Node object (metadata.name).
Expected<std::string> node_name(const nlohmann::json& node, const std::string& field);

// ASCII case-insensitive equality (Go's decoder matches a key to a field so).
bool iequals(std::string_view a, std::string_view b);

}  // namespace allox::extender::wire_read
