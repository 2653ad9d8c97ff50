// The emulated kube-scheduler's side of an HTTP extender call (kube-scheduler v1.28's
// HTTPExtender, pkg/scheduler/framework/extender.go): the ExtenderArgs body as Go's encoder
// writes it, rendered straight into one string (no DOM: the node-names body by its own writer,
// byte for byte what extender_api/wire.h's render() writes, the node-list body by render()), and the
// /filter answer read in one pass (wire.h's SAX reader), every FailedNodes entry kept for the
// scheduler's diagnosis. At 5,000 nodes this is what the emulator spends per /filter besides
// the round trip, and `allox bench cluster` times it as part of /filter, as kube-scheduler's
// own extender latency would.
// Not thread-safe (one ExtenderClient per thread); the functions are otherwise pure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "extender_api/extender_client.h"
#include "extender_api/wire.h"

namespace allox::emulator {

// The pod as a Go client serialises it inside an extender body: no kind/apiVersion.
nlohmann::json wire_object(const nlohmann::json& object);

// ExtenderArgs for `names`, in their order: with `node_objects` null (a nodeCacheCapable
// extender) `"Nodes":null,"NodeNames":[...]`; else the nodes' objects (node_objects[i] is
// names[i]'s) as a v1.NodeList and `"NodeNames":null`.
std::string extender_args_body(const nlohmann::json& pod, const std::vector<std::string>& names,
                               const std::vector<const nlohmann::json*>* node_objects);

// POSTs `body` to `/verb` and reads the ExtenderFilterResult. An Error names the call: a transport
// fault or non-200 answer, or a body Go's decoder refuses (the field and why). The answer's own
// `Error` field is returned in the result for the caller to treat as kube-scheduler does.
Expected<extender::FilterResult> post_filter(extender::ExtenderClient& client,
                                             const std::string& verb, std::string body);

// Which of `kept` were sent (`sent`), in kept's order: an extender cannot add nodes. No copy of
// a sent name (a scan for a few kept nodes, a sorted index of views for many).
std::vector<std::string> kept_of_sent(const extender::NodeNameList& kept,
                                      const std::vector<std::string>& sent);

// The feasible list an extender's /filter answer leaves, as HTTPExtender.Filter reads it: with a
// nodeCacheCapable extender its NodeNames when they are not null, else the names of its Nodes'
// items, else none. Nothing else decides it: a sent node the answer neither keeps nor names in a
// failed map is dropped without a status (findNodesThatPassExtenders). A nodeCacheCapable
// answer naming a node that was not sent is an Error, v1.28's text: `extender "URL" claims a
// filtered node "X" which is not found in the input node list`. Nodes items the emulator did
// not send are dropped (v1.28 would take the extender's objects as they are; the emulator only
// knows its snapshot's nodes). In the answer's order.
Expected<std::vector<std::string>> filter_kept(const extender::FilterResult& answer,
                                               bool node_cache_capable,
                                               const std::vector<std::string>& sent,
                                               std::string_view extender_url);

}  // namespace allox::emulator
