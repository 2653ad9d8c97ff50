#include "tests/alloxd/testing/server_fixture.h"

#include <stdexcept>

#include "fairness/policy.h"

namespace allox::extender::testing {

ServerFixture::ServerFixture(std::vector<NodeInventory> nodes, std::size_t max_body_bytes) {
  ExtenderConfig config = make_config(nodes, dir_.file("state.db"));
  config.max_body_bytes = max_body_bytes;
  auto policy = make_policy(config.policy, PolicyOptions{});
  if (!policy) throw std::runtime_error(policy.message());
  ServiceOptions options;
  options.first_plan_wait = std::chrono::seconds(20);  // loaded CI machines solve slowly
  auto service = ExtenderService::create(config, std::move(*policy), nullptr, options);
  if (!service) throw std::runtime_error(service.message());
  service_ = std::move(*service);
  service_->start();
  service_->solve_now();
  HttpServerOptions http;
  http.port = 0;
  http.max_body_bytes = max_body_bytes;
  http.read_timeout = std::chrono::seconds(2);
  auto server = HttpServer::start(*service_, http);
  if (!server) throw std::runtime_error(server.message());
  server_ = std::move(*server);
  url_ = server_->url();
}

ServerFixture::~ServerFixture() {
  server_->stop();
  service_->stop();
}

}  // namespace allox::extender::testing
