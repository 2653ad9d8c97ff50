#include "tests/extender/test_support.h"

#include <cpprest/http_client.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace allox::extender::testing {

ExtenderConfig make_config(const std::vector<NodeInventory>& nodes, const std::string& database) {
  ExtenderConfig config;
  config.nodes = nodes;
  config.database = database;
  config.policy = "fifo";
  config.tick = 0.2;
  config.admin_token = "test-token";
  config.devices.resources = {{"nvidia.com/gpu", "gpu"}};
  return config;
}

nlohmann::json make_pod(const std::string& namespace_name, const std::string& name,
                        const std::string& resource,
                        const std::map<std::string, std::string>& annotations) {
  nlohmann::json requests =
      resource == "cpu" ? nlohmann::json{{"cpu", "32"}} : nlohmann::json{{resource, "1"}};
  nlohmann::json pod = {
      {"metadata", {{"name", name}, {"namespace", namespace_name}, {"uid", "uid-" + name}}},
      {"spec",
       {{"containers", {{{"name", "main"}, {"resources", {{"requests", requests}}}}}},
        {"schedulerName", "allox-scheduler"}}},
      {"status", {{"phase", "Pending"}}}};
  if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
  return pod;
}

std::string filter_body(const nlohmann::json& pod, const std::vector<std::string>& nodes) {
  return nlohmann::json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", nodes}}.dump();
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ScratchDir::ScratchDir() {
  std::random_device random;
  path_ = (std::filesystem::temp_directory_path() /
           ("allox-extender-test-" + std::to_string(::getpid()) + "-" + std::to_string(random())))
              .string();
  std::filesystem::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

Response http_request(const std::string& base_url, const std::string& method,
                      const std::string& path, const std::string& body,
                      const std::string& authorization) {
  namespace http = web::http;
  try {
    http::client::http_client_config config;
    config.set_timeout(std::chrono::seconds(10));
    http::client::http_client client(base_url, config);
    http::http_request request(method);
    request.set_request_uri(path);
    if (!authorization.empty()) request.headers().add("Authorization", authorization);
    if (!body.empty() || method == "POST") request.set_body(body, "application/json");
    http::http_response response = client.request(request).get();
    Response out;
    out.status = response.status_code();
    out.content_type = response.headers().content_type();
    out.body = response.extract_utf8string(true).get();
    return out;
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace allox::extender::testing
