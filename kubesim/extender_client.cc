#include "kubesim/extender_client.h"

#include <algorithm>

namespace allox::emulator {

using nlohmann::json;

json wire_object(const json& object) {
  json out = object;
  out.erase("kind");
  out.erase("apiVersion");
  return out;
}

namespace {

// `object` as wire_object(object).dump() writes it (keys in byte order, as the std::map-based
// json keeps them; invalid UTF-8 replaced, as extender::render does), without the copy.
void append_wire_object(std::string& out, const json& object) {
  if (!object.is_object()) {
    out += object.dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  out.push_back('{');
  bool first = true;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (it.key() == "kind" || it.key() == "apiVersion") continue;
    if (!first) out.push_back(',');
    first = false;
    out += json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace);
    out.push_back(':');
    out += it.value().dump(-1, ' ', false, json::error_handler_t::replace);
  }
  out.push_back('}');
}

}  // namespace

std::string extender_args_body(const json& pod, const std::vector<std::string>& names,
                               const std::vector<const json*>* node_objects) {
  if (node_objects == nullptr) {
    // The bytes extender::render writes for these ExtenderArgs, written straight into one string
    // sized up front: at 5,000 nodes the list is ~70 KB, and building it as a NodeNameList, then
    // growing the rendered string by doubling, cost a copy and fresh pages per /filter.
    std::string pod_text;
    append_wire_object(pod_text, pod);
    std::size_t bytes = pod_text.size() + 40;
    for (const std::string& name : names) bytes += name.size() + 3;
    std::string out;
    out.reserve(bytes);
    out += "{\"Pod\":";
    out += pod_text;
    out += ",\"Nodes\":null,\"NodeNames\":[";
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (i > 0) out.push_back(',');
      extender::append_json_string(out, names[i]);
    }
    out += "]}";
    return out;
  }
  extender::ExtenderArgs args;
  args.pod = wire_object(pod);
  args.node_objects.emplace();
  args.node_objects->reserve(node_objects->size());
  for (const json* node : *node_objects) args.node_objects->push_back(wire_object(*node));
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
