#include "tests/extender/fake_api_server.h"

#include <cpprest/http_listener.h>

#include <stdexcept>

#include "extender/http_server.h"

namespace allox::extender::testing {

namespace http = web::http;
using nlohmann::json;

struct FakeApiServer::Impl {
  std::map<std::string, std::map<std::string, std::string>> allocatable;
  std::string token;
  mutable std::mutex mu;
  std::vector<Binding> bindings;
  std::vector<std::string> deleted;
  std::map<std::string, std::string> phases;
  std::map<std::string, std::string> bound_to;  // "namespace/name" -> node
  int unauthorized = 0;
  int bind_status = 0;
  std::unique_ptr<http::experimental::listener::http_listener> listener;

  // Path segments of /api/v1/namespaces/{ns}/pods/{name}[/binding].
  static std::vector<std::string> segments(const std::string& path) {
    std::vector<std::string> out;
    std::string current;
    for (char c : path) {
      if (c == '/') {
        if (!current.empty()) out.push_back(web::uri::decode(current));
        current.clear();
      } else {
        current.push_back(c);
      }
    }
    if (!current.empty()) out.push_back(web::uri::decode(current));
    return out;
  }

  void handle(http::http_request request) {
    auto auth = request.headers().find("Authorization");
    if (auth == request.headers().end() || auth->second != "Bearer " + token) {
      std::lock_guard lock(mu);
      ++unauthorized;
      request.reply(401, "unauthorized");
      return;
    }
    std::string body = request.extract_utf8string(true).get();
    auto parts = segments(request.relative_uri().path());
    std::lock_guard lock(mu);
    if (request.method() == http::methods::GET && parts.size() == 3 && parts[2] == "nodes") {
      json items = json::array();
      for (const auto& [name, resources] : allocatable) {
        items.push_back({{"metadata", {{"name", name}}},
                         {"status", {{"allocatable", resources}, {"capacity", resources}}}});
      }
      request.reply(200, json{{"kind", "NodeList"}, {"items", items}}.dump(), "application/json");
      return;
    }
    if (parts.size() >= 6 && parts[2] == "namespaces" && parts[4] == "pods") {
      std::string pod = parts[3] + "/" + parts[5];
      if (parts.size() == 7 && parts[6] == "binding" && request.method() == http::methods::POST) {
        if (bind_status != 0) {
          request.reply(bind_status, json{{"message", "injected failure"}}.dump());
          return;
        }
        json binding = json::parse(body, nullptr, false);
        std::string node =
            binding.is_object()
                ? binding.value("target", json::object()).value("name", std::string())
                : std::string();
        if (!bound_to.emplace(pod, node).second) {  // as the real one: a pod binds once
          request.reply(409, json{{"message", "pod " + pod + " is already assigned"}}.dump());
          return;
        }
        bindings.push_back({parts[3], parts[5], node});
        request.reply(201, binding.dump(), "application/json");
        return;
      }
      if (parts.size() == 6 && request.method() == http::methods::GET) {
        auto it = phases.find(pod);
        auto bound = bound_to.find(pod);
        if (it == phases.end() && bound == bound_to.end()) {
          request.reply(404, "not found");
          return;
        }
        // A bound pod runs until a phase is set; spec.nodeName says where it was bound.
        json answer = {{"metadata", {{"name", parts[5]}, {"namespace", parts[3]}}},
                       {"spec", json::object()},
                       {"status", {{"phase", it != phases.end() ? it->second : "Running"}}}};
        if (bound != bound_to.end()) answer["spec"]["nodeName"] = bound->second;
        request.reply(200, answer.dump(), "application/json");
        return;
      }
      if (parts.size() == 6 && request.method() == http::methods::DEL) {
        deleted.push_back(pod);
        request.reply(200, "{}", "application/json");
        return;
      }
    }
    request.reply(404, "no such fake route");
  }
};

FakeApiServer::FakeApiServer(std::map<std::string, std::map<std::string, std::string>> allocatable,
                             std::string token)
    : impl_(std::make_unique<Impl>()) {
  impl_->allocatable = std::move(allocatable);
  impl_->token = std::move(token);
  auto port = pick_free_port("127.0.0.1");
  if (!port) throw std::runtime_error(port.message());
  url_ = "http://127.0.0.1:" + std::to_string(*port);
  impl_->listener = std::make_unique<http::experimental::listener::http_listener>(url_);
  Impl* impl = impl_.get();
  impl_->listener->support([impl](http::http_request request) { impl->handle(request); });
  impl_->listener->open().wait();
}

FakeApiServer::~FakeApiServer() {
  impl_->listener->close().wait();
}

std::vector<FakeApiServer::Binding> FakeApiServer::bindings() const {
  std::lock_guard lock(impl_->mu);
  return impl_->bindings;
}

std::vector<std::string> FakeApiServer::deleted_pods() const {
  std::lock_guard lock(impl_->mu);
  return impl_->deleted;
}

int FakeApiServer::unauthorized_requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->unauthorized;
}

void FakeApiServer::fail_binds_with(int status) {
  std::lock_guard lock(impl_->mu);
  impl_->bind_status = status;
}

void FakeApiServer::set_pod_phase(const std::string& namespace_name, const std::string& name,
                                  const std::string& phase) {
  std::lock_guard lock(impl_->mu);
  impl_->phases[namespace_name + "/" + name] = phase;
}

}  // namespace allox::extender::testing
