// Helpers shared by the extender tests: configs, pod objects in kube-scheduler's shape, a
// scratch directory, and a small synchronous HTTP client.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "alloxd/config.h"
#include "alloxd/plan/planner.h"
#include "core/result.h"
#include "kubesim/alloxd_process.h"

namespace allox::extender::testing {

// A config with the given inventory, an in-memory-free database path and a short tick.
ExtenderConfig make_config(const std::vector<NodeInventory>& nodes, const std::string& database);

// A FIFO planner over `config` with its nodes as the fixed inventory, not started (null on a
// failure, reported to the test).
std::unique_ptr<Planner> open_fifo_planner(const ExtenderConfig& config, Metrics& metrics);

// A v1.Pod as kube-scheduler sends it. resource: e.g. "nvidia.com/gpu" (1 unit) or "cpu".
// annotations are added as given.
nlohmann::json make_pod(const std::string& namespace_name, const std::string& name,
                        const std::string& resource,
                        const std::map<std::string, std::string>& annotations = {});

// A v1.Node as the watch lists it: `gpus` of nvidia.com/gpu and, unless empty, `cpus` of cpu
// allocatable.
nlohmann::json make_node(const std::string& name, const std::string& gpus,
                         const std::string& cpus = "");

// ExtenderArgs with the NodeNames shape.
std::string filter_body(const nlohmann::json& pod, const std::vector<std::string>& nodes);

std::string read_text_file(const std::string& path);

// A self-signed certificate (CN and subjectAltName 127.0.0.1, and DNS localhost, valid for an
// hour) and its RSA key, written as PEM files; made here so no test ships a key or needs
// the network. Fails the calling test on an OpenSSL error.
void write_self_signed(const std::string& cert_path, const std::string& key_path);

// A fresh directory under the system temp dir, removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The alloxd binary built beside these tests, with `config` and its store at `database`, on a
// free port; returns once it logged 'ready' (an event, never a sleep).
Expected<std::unique_ptr<emulator::AlloxdProcess>> start_alloxd_binary(const std::string& config,
                                                                       const std::string& database);

struct Response {
  int status = 0;  // 0 when the request failed (connection refused, timeout)
  std::string body;
  std::string content_type;
};

// One synchronous request; never throws.
Response http_request(const std::string& base_url, const std::string& method,
                      const std::string& path, const std::string& body = "",
                      const std::string& authorization = "");

}  // namespace allox::extender::testing
