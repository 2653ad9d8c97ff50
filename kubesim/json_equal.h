// Equality of two JSON objects that leaves some members out, without copying either side: what
// kube-apiserver's and kube-scheduler's "did anything but X change" checks need (pod update
// validation, isPodUpdated). Copying a pod to erase the ignored members and comparing the
// copies gave the same answer at the cost of two deep copies per change.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string_view>

namespace allox::emulator {

// a == b ignoring the members of `a` and `b` named in `skip`. When either is not an object the
// members are not looked at: a == b.
bool equal_except(const nlohmann::json& a, const nlohmann::json& b,
                  std::initializer_list<std::string_view> skip);

}  // namespace allox::emulator
