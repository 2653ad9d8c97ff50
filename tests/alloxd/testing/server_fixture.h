// An in-process alloxd (ExtenderService + HttpServer on a free loopback port) for tests that
// talk HTTP, with the fifo policy so outcomes do not depend on the fairness knob.
#pragma once

#include <memory>
#include <string>

#include "alloxd/http/http_server.h"
#include "alloxd/service.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender::testing {

class ServerFixture {
 public:
  explicit ServerFixture(std::vector<NodeInventory> nodes, std::size_t max_body_bytes = 1 << 20);
  ~ServerFixture();

  ExtenderService& service() { return *service_; }
  const std::string& url() const { return url_; }
  Response get(const std::string& path) const { return http_request(url_, "GET", path); }
  Response post(const std::string& path, const std::string& body,
                const std::string& authorization = "") const {
    return http_request(url_, "POST", path, body, authorization);
  }

 private:
  ScratchDir dir_;
  std::unique_ptr<ExtenderService> service_;
  std::unique_ptr<HttpServer> server_;
  std::string url_;
};

}  // namespace allox::extender::testing
