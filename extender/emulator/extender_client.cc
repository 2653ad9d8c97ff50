#include "extender/emulator/extender_client.h"

#include <algorithm>

namespace allox::emulator {

using nlohmann::json;

json wire_object(const json& object) {
  json out = object;
  out.erase("kind");
  out.erase("apiVersion");
  return out;
}

std::string extender_args_body(const json& pod, const std::vector<std::string>& names,
                               const std::vector<const json*>* node_objects) {
  extender::ExtenderArgs args;
  args.pod = wire_object(pod);
  if (node_objects == nullptr) {
    std::size_t bytes = 0;
    for (const std::string& name : names) bytes += name.size();
    args.node_names.emplace();
    args.node_names->reserve(names.size(), bytes);
    for (const std::string& name : names) args.node_names->push_back(name);
  } else {
    args.node_objects.emplace();
    args.node_objects->reserve(node_objects->size());
    for (const json* node : *node_objects) args.node_objects->push_back(wire_object(*node));
  }
  return extender::render(args);
}

Expected<extender::FilterResult> post_filter(extender::ExtenderClient& client,
                                             const std::string& verb, std::string body) {
  const std::string path = "/" + verb;
  auto answer = client.post_text(path, std::move(body));
  if (!answer) return answer.error();
  auto result = extender::parse_filter_result(*answer);
  if (!result) return Error{"POST " + path + ": " + result.message()};
  return result;
}

std::vector<std::string> kept_of_sent(const extender::NodeNameList& kept,
                                      const std::vector<std::string>& sent) {
  std::vector<std::string> out;
  out.reserve(kept.size());
  // alloxd keeps a node or two of thousands: a scan is cheaper than an index then.
  constexpr std::size_t kScanned = 8;
  if (kept.size() <= kScanned) {
    for (std::string_view name : kept) {
      if (std::find(sent.begin(), sent.end(), name) != sent.end()) out.emplace_back(name);
    }
    return out;
  }
  std::vector<std::string_view> index(sent.begin(), sent.end());
  std::sort(index.begin(), index.end());
  for (std::string_view name : kept) {
    if (std::binary_search(index.begin(), index.end(), name)) out.emplace_back(name);
  }
  return out;
}

Expected<std::vector<std::string>> filter_kept(const extender::FilterResult& answer,
                                               bool node_cache_capable,
                                               const std::vector<std::string>& sent,
                                               std::string_view extender_url) {
  if (node_cache_capable && answer.node_names) {
    std::vector<std::string> kept = kept_of_sent(*answer.node_names, sent);
    if (kept.size() == answer.node_names->size()) return kept;
    for (std::size_t i = 0, k = 0; i < answer.node_names->size(); ++i) {
      const std::string_view name = (*answer.node_names)[i];
      if (k < kept.size() && kept[k] == name) {
        ++k;
        continue;
      }
      return Error{"extender \"" + std::string(extender_url) + "\" claims a filtered node \"" +
                   std::string(name) + "\" which is not found in the input node list"};
    }
    return kept;
  }
  extender::NodeNameList named;
  if (answer.node_objects) {
    for (const json& node : *answer.node_objects) {
      const json* metadata = node.is_object() ? extender::find_key(node, "metadata") : nullptr;
      const json* name = metadata != nullptr && metadata->is_object()
                             ? extender::find_key(*metadata, "name")
                             : nullptr;
      named.push_back(name != nullptr && name->is_string() ? name->get_ref<const std::string&>()
                                                           : std::string());
    }
  }
  return kept_of_sent(named, sent);
}

}  // namespace allox::emulator
