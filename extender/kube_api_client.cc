// ClusterApi over cpprestsdk's http_client (see cluster_api.h).
#include <cpprest/http_client.h>

#include <boost/asio/ssl.hpp>
#include <cmath>

#include "extender/cluster_api.h"
#include "extender/pod.h"

namespace allox::extender {
namespace {

using nlohmann::json;
namespace http = web::http;

class KubeApiClient final : public ClusterApi {
 public:
  explicit KubeApiClient(const ApiServerConfig& config) : config_(config) {
    http::client::http_client_config client_config;
    client_config.set_timeout(std::chrono::seconds(10));
    if (!config_.ca_file.empty()) {
      std::string ca = config_.ca_file;
      client_config.set_ssl_context_callback([ca](boost::asio::ssl::context& context) {
        boost::system::error_code ignored;
        context.load_verify_file(ca, ignored);
      });
    }
    client_ = std::make_unique<http::client::http_client>(config_.url, client_config);
  }

  Status bind(const BindingArgs& binding) override {
    json body = {{"apiVersion", "v1"},
                 {"kind", "Binding"},
                 {"metadata",
                  {{"name", binding.pod_name},
                   {"namespace", binding.pod_namespace},
                   {"uid", binding.pod_uid}}},
                 {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", binding.node}}}};
    auto reply = send(http::methods::POST,
                      "/api/v1/namespaces/" + escape(binding.pod_namespace) + "/pods/" +
                          escape(binding.pod_name) + "/binding",
                      body.dump());
    if (!reply)
      return Error{"binding " + binding.pod_namespace + "/" + binding.pod_name + " to " +
                   binding.node + ": " + reply.message()};
    if (reply->status != 201 && reply->status != 200) {
      return Error{"binding " + binding.pod_namespace + "/" + binding.pod_name + " to " +
                   binding.node + ": API server answered " + std::to_string(reply->status) + ": " +
                   reply->body.substr(0, 300)};
    }
    return OkStatus();
  }

  Expected<std::vector<NodeInventory>> list_nodes(const DeviceMapping& devices) override {
    auto reply = send(http::methods::GET, "/api/v1/nodes", "");
    if (!reply) return Error{"listing nodes: " + reply.message()};
    if (reply->status != 200) {
      return Error{"listing nodes: API server answered " + std::to_string(reply->status)};
    }
    json list = json::parse(reply->body, nullptr, false);
    if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) {
      return Error{"listing nodes: the answer is not a NodeList"};
    }
    std::vector<NodeInventory> nodes;
    for (const json& node : list["items"]) {
      auto inventory = node_inventory(node, devices);
      if (!inventory) return Error{"listing nodes: " + inventory.message()};
      nodes.push_back(std::move(*inventory));
    }
    return nodes;
  }

  Expected<std::string> pod_phase(const std::string& namespace_name,
                                  const std::string& name) override {
    auto reply = send(http::methods::GET,
                      "/api/v1/namespaces/" + escape(namespace_name) + "/pods/" + escape(name), "");
    if (!reply) return reply.error();
    if (reply->status == 404) return std::string("Gone");
    if (reply->status != 200) return Error{"API server answered " + std::to_string(reply->status)};
    json pod = json::parse(reply->body, nullptr, false);
    if (!pod.is_object()) return Error{"pod answer is not an object"};
    json phase = pod.value("status", json::object()).value("phase", json(""));
    return phase.is_string() ? phase.get<std::string>() : std::string();
  }

  Expected<ObservedPod> get_pod(const std::string& namespace_name,
                                const std::string& name) override {
    ObservedPod observed;
    observed.pod = {name, namespace_name, ""};
    auto reply = send(http::methods::GET,
                      "/api/v1/namespaces/" + escape(namespace_name) + "/pods/" + escape(name), "");
    if (!reply) return reply.error();
    if (reply->status == 404) {
      observed.exists = false;
      return observed;
    }
    if (reply->status != 200) return Error{"API server answered " + std::to_string(reply->status)};
    json pod = json::parse(reply->body, nullptr, false);
    if (!pod.is_object()) return Error{"pod answer is not an object"};
    auto text_at = [&](const char* section, const char* key) {
      const json* part = find_key(pod, section);
      const json* value = part != nullptr && part->is_object() ? find_key(*part, key) : nullptr;
      return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
    };
    observed.pod.uid = text_at("metadata", "uid");
    observed.node_name = text_at("spec", "nodeName");
    observed.phase = text_at("status", "phase");
    return observed;
  }

  Status delete_pod(const std::string& namespace_name, const std::string& name) override {
    auto reply = send(http::methods::DEL,
                      "/api/v1/namespaces/" + escape(namespace_name) + "/pods/" + escape(name), "");
    if (!reply) return reply.error();
    if (reply->status >= 300 && reply->status != 404) {
      return Error{"deleting " + namespace_name + "/" + name + ": API server answered " +
                   std::to_string(reply->status)};
    }
    return OkStatus();
  }

 private:
  struct Reply {
    int status = 0;
    std::string body;
  };

  static std::string escape(const std::string& segment) {
    return web::uri::encode_data_string(segment);
  }

  Expected<Reply> send(const http::method& method, const std::string& path,
                       const std::string& body) {
    http::http_request request(method);
    request.set_request_uri(path);
    if (!config_.token.empty()) {
      request.headers().add("Authorization", "Bearer " + config_.token);
    }
    request.headers().add("Accept", "application/json");
    if (!body.empty()) request.set_body(body, "application/json");
    try {
      http::http_response response = client_->request(request).get();
      return Reply{response.status_code(), response.extract_utf8string(true).get()};
    } catch (const std::exception& e) {
      return Error{std::string("cannot reach the API server: ") + e.what()};
    }
  }

  ApiServerConfig config_;
  std::unique_ptr<http::client::http_client> client_;
};

}  // namespace

std::unique_ptr<ClusterApi> make_kube_api_client(const ApiServerConfig& config) {
  return std::make_unique<KubeApiClient>(config);
}

Expected<NodeInventory> node_inventory(const json& node, const DeviceMapping& devices) {
  if (!node.is_object()) return Error{"node: expected an object"};
  NodeInventory inventory;
  const json* metadata = find_key(node, "metadata");
  const json* name =
      metadata != nullptr && metadata->is_object() ? find_key(*metadata, "name") : nullptr;
  if (name == nullptr || !name->is_string()) return Error{"node: metadata.name missing"};
  inventory.name = name->get<std::string>();
  const json* status = find_key(node, "status");
  const json* allocatable =
      status != nullptr && status->is_object() ? find_key(*status, "allocatable") : nullptr;
  if (allocatable == nullptr || !allocatable->is_object()) return inventory;
  for (const auto& [resource, quantity] : allocatable->items()) {
    if (!quantity.is_string()) continue;
    auto amount = parse_quantity(quantity.get<std::string>());
    if (!amount) return Error{"node " + inventory.name + ": " + resource + ": " + amount.message()};
    if (resource == "cpu") {
      int machines = static_cast<int>(std::floor(*amount / devices.cores_per_machine));
      if (machines > 0) inventory.machines[devices.cpu_device] += machines;
    } else if (auto device = devices.device_for(resource)) {
      int machines = static_cast<int>(std::floor(*amount));
      if (machines > 0) inventory.machines[*device] += machines;
    }
  }
  return inventory;
}

}  // namespace allox::extender
