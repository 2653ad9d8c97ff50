// extender/config.h: a full config loads; unknown keys, wrong types and bad values are errors
// naming the key.
#include "extender/config.h"

#include <gtest/gtest.h>

namespace allox::extender {
namespace {

TEST(ConfigTest, ShippedExampleLoads) {
  auto config = load_extender_config(ALLOX_SOURCE_DIR "/examples/alloxd.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  EXPECT_EQ("127.0.0.1", config->listen_host);
  EXPECT_EQ(8888, config->listen_port);
  EXPECT_EQ("allox", config->policy);
  ASSERT_EQ(3u, config->nodes.size());
  EXPECT_EQ(2, config->nodes[0].machines.at("gpu"));
  EXPECT_EQ("gpu", config->devices.device_for("nvidia.com/gpu").value());
  EXPECT_FALSE(config->apiserver.has_value());
}

TEST(ConfigTest, ReadsEveryKey) {
  auto config = parse_extender_config(R"(
listen: 0.0.0.0:9000
database: /tmp/x.db
policy: fifo
alpha: 0.25
starvation_bound: 60
tick: 0.5
default_job_seconds: 100
max_body_bytes: 2048
http_threads: 8
admin_token: t
devices: [{resource: example.com/tpu, device: tpu}]
cpu: {device: cpu, cores_per_machine: 16}
nodes: [{name: n1, machines: {tpu: 4, cpu: 2}}]
apiserver: {url: "https://k8s.local/", token: abc, ca_file: /ca.crt}
)",
                                      "test.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  EXPECT_EQ("0.0.0.0", config->listen_host);
  EXPECT_EQ(9000, config->listen_port);
  EXPECT_EQ("/tmp/x.db", config->database);
  EXPECT_EQ("fifo", config->policy);
  EXPECT_DOUBLE_EQ(0.25, config->alpha);
  EXPECT_DOUBLE_EQ(60, config->starvation_bound);
  EXPECT_DOUBLE_EQ(0.5, config->tick);
  EXPECT_DOUBLE_EQ(100, config->default_job_seconds);
  EXPECT_EQ(2048u, config->max_body_bytes);
  EXPECT_EQ(8, config->http_threads);
  EXPECT_EQ("t", config->admin_token);
  EXPECT_EQ("tpu", config->devices.device_for("example.com/tpu").value());
  EXPECT_FALSE(config->devices.device_for("nvidia.com/gpu").has_value());
  EXPECT_DOUBLE_EQ(16, config->devices.cores_per_machine);
  EXPECT_EQ(4, config->nodes.at(0).machines.at("tpu"));
  ASSERT_TRUE(config->apiserver.has_value());
  EXPECT_EQ("https://k8s.local", config->apiserver->url);
  EXPECT_EQ("abc", config->apiserver->token);
}

TEST(ConfigTest, BadConfigsNameTheKey) {
  struct Case {
    const char* yaml;
    const char* error;
  };
  const Case cases[] = {
      {"lisen: 1.2.3.4:5", "t.yaml: unknown key 'lisen'"},
      {"nodes: [{name: a, machines: {gpu: 1}, gpus: 2}]", "unknown key 'nodes[0].gpus'"},
      {"apiserver: {url: http://x, tokn: y}", "unknown key 'apiserver.tokn'"},
      {"alpha: 0", "alpha: must be in (0, 1]"},
      {"alpha: lots", "alpha: expected a number, got 'lots'"},
      {"tick: -1", "tick: must be > 0"},
      {"listen: nohost", "listen: expected host:port"},
      {"listen: h:99999", "listen: bad port"},
      {"nodes: [{name: a, machines: {GPU: 1}}]", "nodes[0].machines.GPU: device type 'GPU'"},
      {"nodes: [{name: a, machines: {gpu: -1}}]", "nodes[0].machines.gpu: must be >= 0"},
      {"nodes: [{name: a, machines: {}}, {name: a, machines: {}}]", "duplicate node 'a'"},
      {"apiserver: {url: k8s.local}", "apiserver.url: expected an http:// or https:// URL"},
      {"devices: {resource: x}", "devices: expected a list"},
      {"max_body_bytes: 10", "max_body_bytes: must be >= 1024"},
      {"http_threads: 0", "http_threads: must be in 1..256"},
      {"admin_token_file: /nonexistent/token", "admin_token_file: cannot read"},
      {"[1, 2]", "expected a mapping"},
  };
  for (const Case& c : cases) {
    auto config = parse_extender_config(c.yaml, "t.yaml");
    ASSERT_FALSE(config.ok()) << c.yaml;
    EXPECT_NE(std::string::npos, config.message().find(c.error))
        << c.yaml << " -> " << config.message();
  }
}

TEST(ConfigTest, ListenAddressOverride) {
  ExtenderConfig config;
  ASSERT_TRUE(set_listen_address(config, "127.0.0.1:0").ok());
  EXPECT_EQ(0, config.listen_port);
  EXPECT_FALSE(set_listen_address(config, "127.0.0.1:x").ok());
  EXPECT_FALSE(set_listen_address(config, ":80").ok());
}

}  // namespace
}  // namespace allox::extender
