#include "tests/alloxd/testing/test_support.h"

// cpprest's U() macro would break gtest's templates.
#define _TURN_OFF_PLATFORM_STRING
#include <cpprest/http_client.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
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

std::unique_ptr<Planner> open_fifo_planner(const ExtenderConfig& config, Metrics& metrics) {
  PlannerOptions options;
  options.inventory = config.nodes;
  auto made =
      Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics, options);
  EXPECT_TRUE(made.ok()) << made.message();
  return made.ok() ? std::move(*made) : nullptr;
}

nlohmann::json make_node(const std::string& name, const std::string& gpus,
                         const std::string& cpus) {
  nlohmann::json allocatable = {{"nvidia.com/gpu", gpus}};
  if (!cpus.empty()) allocatable["cpu"] = cpus;
  return {{"metadata", {{"name", name}, {"resourceVersion", "1"}}},
          {"status", {{"allocatable", allocatable}}}};
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

Expected<std::unique_ptr<emulator::AlloxdProcess>> start_alloxd_binary(
    const std::string& config, const std::string& database) {
  emulator::AlloxdLaunch launch;
  launch.binary = ALLOX_BINARY_DIR "/cli/alloxd";
  launch.config = config;
  launch.database = database;
  return emulator::AlloxdProcess::start(launch);
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

void write_self_signed(const std::string& cert_path, const std::string& key_path) {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  ASSERT_NE(nullptr, key);
  X509* cert = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  // Clients check the address they dialled against subjectAltName (RFC 2818).
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* san =
      X509V3_EXT_conf_nid(nullptr, &context, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  ASSERT_NE(nullptr, san);
  X509_add_ext(cert, san, -1);
  X509_EXTENSION_free(san);
  ASSERT_GT(X509_sign(cert, key, EVP_sha256()), 0);
  FILE* out = std::fopen(cert_path.c_str(), "w");
  ASSERT_NE(nullptr, out) << cert_path;
  PEM_write_X509(out, cert);
  std::fclose(out);
  out = std::fopen(key_path.c_str(), "w");
  ASSERT_NE(nullptr, out) << key_path;
  PEM_write_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(out);
  X509_free(cert);
  EVP_PKEY_free(key);
}

}  // namespace allox::extender::testing
