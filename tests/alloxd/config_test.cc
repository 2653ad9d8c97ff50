// alloxd/config.h: a full config loads; unknown keys, wrong types and bad values are errors
// in core's style (file:line: subject: field must be ..., got X), all of them at once.
#include "alloxd/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "core/input_file.h"

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
  EXPECT_EQ(LogLevel::kInfo, config->log.level);
  EXPECT_EQ(LogFormat::kText, config->log.format) << "scripts/demo.sh reads its text lines";
}

TEST(ConfigTest, DefaultsWhenKeysAreAbsent) {
  for (const char* yaml : {"{}", "policy: fifo"}) {
    auto config = parse_extender_config(yaml, "t.yaml");
    ASSERT_TRUE(config.ok()) << config.message();
    EXPECT_EQ("gpu", config->devices.device_for("nvidia.com/gpu").value_or("none")) << yaml;
    EXPECT_EQ("cpu", config->devices.cpu_device);
    EXPECT_DOUBLE_EQ(32, config->devices.cores_per_machine);
    EXPECT_EQ("127.0.0.1", config->listen_host);
    EXPECT_EQ(8888, config->listen_port);
    EXPECT_DOUBLE_EQ(0.5, config->alpha);
    EXPECT_FALSE(config->batch_rounds);                           // the paper's one start per solve
    EXPECT_EQ(RequestThreads::kNormal, config->request_threads);  // real-time is an opt-in
    EXPECT_EQ(std::size_t{1} << 20, config->max_body_bytes);
    EXPECT_TRUE(config->admin_token.empty());
    EXPECT_FALSE(config->reports_listen.has_value());
  }
}

TEST(ConfigTest, ReadsEveryKey) {
  auto config = parse_extender_config(R"(
listen: 0.0.0.0:9000
database: /tmp/x.db
policy: fifo
alpha: 0.25
starvation_bound: 60
batch_rounds: true
tick: 0.5
default_job_seconds: 100
fairness_window: 600
max_body_bytes: 2048
http_threads: 8
request_threads: realtime
admin_token: t
devices: [{resource: example.com/tpu, device: tpu}]
cpu: {device: cpu, cores_per_machine: 16}
nodes: [{name: n1, machines: {tpu: 4, cpu: 2}}]
tenancy: {users: {team-a: alice}, user_annotation_namespaces: [lab, ml]}
retention: {finished_seconds: 600, history_seconds: 1200}
log: {level: debug, format: json}
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
  EXPECT_TRUE(config->batch_rounds);
  EXPECT_DOUBLE_EQ(0.5, config->tick);
  EXPECT_DOUBLE_EQ(100, config->default_job_seconds);
  EXPECT_DOUBLE_EQ(600, config->fairness_window);
  EXPECT_EQ(2048u, config->max_body_bytes);
  EXPECT_EQ(8, config->http_threads);
  EXPECT_EQ(RequestThreads::kRealtime, config->request_threads);
  EXPECT_EQ("t", config->admin_token);
  EXPECT_EQ("tpu", config->devices.device_for("example.com/tpu").value());
  EXPECT_FALSE(config->devices.device_for("nvidia.com/gpu").has_value());
  EXPECT_DOUBLE_EQ(16, config->devices.cores_per_machine);
  EXPECT_EQ(4, config->nodes.at(0).machines.at("tpu"));
  EXPECT_EQ("alice", config->tenancy.namespace_users.at("team-a"));
  EXPECT_EQ((std::set<std::string>{"lab", "ml"}), config->tenancy.user_annotation_namespaces);
  EXPECT_DOUBLE_EQ(600, config->retention.finished_seconds);
  EXPECT_DOUBLE_EQ(1200, config->retention.history_seconds);
  EXPECT_EQ(LogLevel::kDebug, config->log.level);
  EXPECT_EQ(LogFormat::kJson, config->log.format);
  EXPECT_EQ("alloxd", config->log.program);
  ASSERT_TRUE(config->apiserver.has_value());
  EXPECT_EQ("https://k8s.local", config->apiserver->url);
  EXPECT_EQ("abc", config->apiserver->token);
}

TEST(ConfigTest, ApiServerUrlsWithAHostAreAccepted) {
  for (const char* url :
       {"https://kubernetes.default.svc", "https://10.0.0.1:6443/", "http://127.0.0.1:8080",
        "https://[::1]:6443", "https://[fd00::1]", "https://k8s.local/prefix?x=1"}) {
    auto config = parse_extender_config(std::string("apiserver: {url: '") + url + "'}", "t.yaml");
    EXPECT_TRUE(config.ok()) << url << ": " << config.message();
  }
}

// Each bad value gives one message in core's style (file:line: subject: field must be ..., got X).
TEST(ConfigTest, BadConfigsNameTheKey) {
  const std::string devices =
      "must be a device type name (lowercase letters, digits, '-', '_', "
      "'.'; at most 63 characters)";
  struct Case {
    std::string yaml;
    std::string error;
  };
  const std::string keys =
      "listen, reports_listen, database, policy, alpha, starvation_bound, batch_rounds, tick, "
      "default_job_seconds, fairness_window, max_body_bytes, http_threads, request_threads, "
      "admin_token, admin_token_file, devices, throughputs, cpu, nodes, tenancy, retention, log, "
      "apiserver, scheduler_name, webhook, limits";
  const std::string not_a_config =
      "t.yaml:1: not an alloxd config: expected a mapping of settings (" + keys + "), got ";
  const Case cases[] = {
      {"policy: fifo\nlisen: 1.2.3.4:5",
       R"(t.yaml:2: unknown key "lisen" (expected one of: )" + keys + ")"},
      // A document with none of alloxd's keys is some other file: nothing of it is quoted.
      {"lisen: 1.2.3.4:5",
       not_a_config + "a mapping none of whose keys is an alloxd setting (its contents are not "
                      "shown)"},
      {"hunter2", not_a_config + "plain text (its contents are not shown)"},
      {"root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/:/usr/sbin/nologin",
       not_a_config + "plain text (its contents are not shown)"},
      {"",
       "t.yaml:1: the config is empty; give at least one setting, or {} to start on every "
       "default"},
      {"# only comments\n\n",
       "t.yaml:1: the config is empty; give at least one setting, or {} "
       "to start on every default"},
      {"tick: 1\npolicy: fifo\ntick: 2", R"(t.yaml:3: duplicate key "tick" (first on line 1))"},
      {"nodes:\n  - name: a\n    machines: {gpu: 1}\n    machines: {gpu: 2}",
       R"(t.yaml:4: duplicate key "machines" (first on line 3))"},
      {"nodes: [{name: a, machines: {gpu: 1, gpu: 2}}]",
       R"(t.yaml:1: duplicate key "gpu" (first on line 1))"},
      {"tick: 1e-300", "t.yaml:1: tick must be a number of seconds from 0.05 to 3600, got 1e-300"},
      {"tick: 0", "t.yaml:1: tick must be a number of seconds from 0.05 to 3600, got 0"},
      {"tick: 1e308", "t.yaml:1: tick must be a number of seconds from 0.05 to 3600, got 1e308"},
      {"tick: .nan", R"(t.yaml:1: tick must be a number of seconds from 0.05 to 3600, got ".nan")"},
      {"tick: .inf", R"(t.yaml:1: tick must be a number of seconds from 0.05 to 3600, got ".inf")"},
      {"starvation_bound: 1e300",
       "t.yaml:1: starvation_bound must be a number of seconds from 1 to 3.1536e+08, got 1e300"},
      {"default_job_seconds: 1e-9",
       "t.yaml:1: default_job_seconds must be a number of seconds from 0.001 to 2.592e+06, got "
       "1e-9"},
      {"fairness_window: -5",
       "t.yaml:1: fairness_window must be a number of seconds from 1 to 3.1536e+08, got -5"},
      {"retention: {history_seconds: 1e300}",
       "t.yaml:1: retention: history_seconds must be a number of seconds from 0 to 3.1536e+08, "
       "got 1e300"},
      {"apiserver: {url: 'http://'}",
       R"(t.yaml:1: apiserver: url must be an http:// or https:// URL with a host, got )"
       R"("http://": no host)"},
      {"apiserver: {url: 'https:///api'}",
       R"(t.yaml:1: apiserver: url must be an http:// or https:// URL with a host, got )"
       R"("https:///api": no host)"},
      {"apiserver: {url: 'https://:6443'}",
       R"(t.yaml:1: apiserver: url must be an http:// or https:// URL with a host, got )"
       R"("https://:6443": no host)"},
      {"apiserver: {url: 'https://k8s:'}",
       R"(t.yaml:1: apiserver: url must be an http:// or https:// URL with a host, got )"
       R"("https://k8s:": an empty port)"},
      {"apiserver: {url: 'https://k8s:70000'}",
       R"(t.yaml:1: apiserver: url must be an http:// or https:// URL with a host, got )"
       R"("https://k8s:70000": the port must be from 1 to 65535)"},
      {"apiserver: {url: 'https://k8s .local'}",
       R"(t.yaml:1: apiserver: url must be an http:// or https:// URL with a host, got )"
       R"("https://k8s .local": it holds spaces or control characters)"},
      {"apiserver: {url: 'https://[::1'}",
       R"(t.yaml:1: apiserver: url must be an http:// or https:// URL with a host, got )"
       R"("https://[::1": an IPv6 host needs its closing ']')"},
      {"apiserver: {url: 'https://[::1]x:6443'}",
       R"(t.yaml:1: apiserver: url must be an http:// or https:// URL with a host, got )"
       R"("https://[::1]x:6443": junk after the IPv6 host)"},
      {"apiserver: {url: 'https://admin:pw@k8s'}",
       "t.yaml:1: apiserver: url must be an http:// or https:// URL with a host, got a URL: "
       "credentials belong in token or token_file, not in the URL"},
      {"admin_token: ' '", "t.yaml:1: admin_token must be a token, got only whitespace"},
      {"admin_token: \"\\t\\n\"", "t.yaml:1: admin_token must be a token, got only whitespace"},
      {"admin_token: 's3cret '",
       "t.yaml:1: admin_token must be a token without spaces or control characters"},
      {"admin_token: [a]", "t.yaml:1: admin_token must be a non-empty token"},
      {"apiserver: {url: 'https://k8s', token: ' '}",
       "t.yaml:1: apiserver: token must be a token, got only whitespace"},
      {"nodes: [{name: a, machines: {gpu: 1}, gpus: 2}]",
       R"(t.yaml:1: nodes[0]: unknown key "gpus" (expected one of: name, machines))"},
      {"apiserver: {url: http://x, tokn: y}",
       R"(t.yaml:1: apiserver: unknown key "tokn" (expected one of: url, token, token_file, )"
       R"(ca_file, lease))"},
      {"webhook: {listen: 0.0.0.0:8443, tls_cert_file: a.crt}",
       "t.yaml:1: webhook: give both tls_cert_file and tls_key_file, or neither"},
      {"webhook: {tls_cert_file: a.crt, tls_key_file: a.key}",
       "t.yaml:1: webhook: listen is required"},
      {"apiserver: {url: http://x, lease: {namespace: '', name: a}}",
       R"(t.yaml:1: apiserver.lease: namespace must be a non-empty string, got "")"},
      {"alpha: 0", "t.yaml:1: alpha must be a number in (0, 1], got 0"},
      {"alpha: 1.5", "t.yaml:1: alpha must be a number in (0, 1], got 1.5"},
      {"alpha: lots", R"(t.yaml:1: alpha must be a number in (0, 1], got "lots")"},
      {"batch_rounds: yes", R"(t.yaml:1: batch_rounds must be true or false, got "yes")"},
      {"tick: -1", "t.yaml:1: tick must be a number of seconds from 0.05 to 3600, got -1"},
      {"starvation_bound: [1]",
       "t.yaml:1: starvation_bound must be a number of seconds from 1 to 3.1536e+08, got a list"},
      {"listen: nohost",
       R"(t.yaml:1: listen must be host:port with a port from 0 to 65535, got "nohost")"},
      {"listen: h:99999",
       R"(t.yaml:1: listen must be host:port with a port from 0 to 65535, got "h:99999")"},
      {"reports_listen: ':80'",
       R"(t.yaml:1: reports_listen must be host:port with a port from 0 to 65535, got ":80")"},
      {"database: ''", R"(t.yaml:1: database must be a non-empty string, got "")"},
      {"nodes: [{name: a, machines: {GPU: 1}}]",
       R"(t.yaml:1: node "a": machines key )" + devices + R"(, got "GPU")"},
      {"nodes: [{name: a, machines: {gpu: -1}}]",
       "t.yaml:1: node \"a\": machines.gpu must be a whole number from 0 to 100000, got -1"},
      {"nodes: [{name: a, machines: {gpu: 1.5}}]",
       "t.yaml:1: node \"a\": machines.gpu must be a whole number from 0 to 100000, got 1.5"},
      {"nodes: [{name: a}]", R"(t.yaml:1: node "a": machines is required)"},
      {"nodes: [{machines: {}}]", "t.yaml:1: nodes[0]: name is required"},
      {"nodes: [{name: a, machines: {}}, {name: a, machines: {}}]",
       R"(t.yaml:1: node "a": duplicate node name)"},
      {"apiserver: {url: k8s.local}",
       R"(t.yaml:1: apiserver: url must be an http:// or https:// URL, got "k8s.local")"},
      {"apiserver: {token: x}", "t.yaml:1: apiserver: url is required"},
      {"devices: {resource: x}", "t.yaml:1: devices must be a list, got a mapping"},
      {"devices: [{resource: x, device: Big}]",
       R"(t.yaml:1: devices[0]: device )" + devices + R"(, got "Big")"},
      {"devices: [{device: tpu}]", "t.yaml:1: devices[0]: resource is required"},
      {"cpu: {cores_per_machine: 0}",
       "t.yaml:1: cpu: cores_per_machine must be a number of cores from 0.001 to 1e6, got 0"},
      {"max_body_bytes: 10",
       "t.yaml:1: max_body_bytes must be a whole number from 1024 to 1073741824, got 10"},
      {"http_threads: 0", "t.yaml:1: http_threads must be a whole number from 1 to 256, got 0"},
      // Thread-class settings alloxd does not have (its classes are fixed: design.md, "Threads").
      {"policy: fifo\nhttp_thread_slice_us: 250",
       R"(t.yaml:2: unknown key "http_thread_slice_us" (expected one of: )" + keys + ")"},
      {"policy: fifo\nbackground_threads: idle",
       R"(t.yaml:2: unknown key "background_threads" (expected one of: )" + keys + ")"},
      {"request_threads: fast",
       R"(t.yaml:1: request_threads must be auto, normal or realtime, got "fast")"},
      {"admin_token_file: /nonexistent/token",
       "t.yaml:1: admin_token_file must name a readable token file: /nonexistent/token: no such "
       "file"},
      {"[1, 2]", not_a_config + "a list (its contents are not shown)"},
      {"log: {level: loud}",
       R"(t.yaml:1: log: level must be one of debug, info, warn, error, got "loud")"},
      {"log: {format: logfmt}", R"(t.yaml:1: log: format must be one of text, json, got "logfmt")"},
      {"log: {levl: info}",
       R"(t.yaml:1: log: unknown key "levl" (expected one of: level, format))"},
      {"tenancy: {user: {a: b}}",
       R"(t.yaml:1: tenancy: unknown key "user" (expected one of: users, )"
       R"(user_annotation_namespaces))"},
      {"tenancy: {users: [a]}",
       "t.yaml:1: tenancy: users must be a mapping of namespace to user, got a list"},
      {"tenancy: {users: {team-a: [x]}}",
       "t.yaml:1: tenancy: users.team-a must be a non-empty user name, got a list"},
      {"tenancy: {user_annotation_namespaces: lab}",
       R"(t.yaml:1: tenancy: user_annotation_namespaces must be a list, got "lab")"},
      {"tenancy: {user_annotation_namespaces: [{a: b}]}",
       "t.yaml:1: tenancy: user_annotation_namespaces[0] must be a namespace name, got a mapping"},
      {"retention: {finished_seconds: -1}",
       "t.yaml:1: retention: finished_seconds must be a number of seconds from 0 to 3.1536e+08, "
       "got -1"},
      {"{fairness_window: 1, retention: {finished_seconds: 600, history_seconds: 60}}",
       "t.yaml:1: retention: history_seconds must be >= finished_seconds (600), got 60"},
      {"{fairness_window: 7200, retention: {finished_seconds: 600}}",
       "t.yaml:1: fairness_window must be <= retention.finished_seconds (600): the windowed "
       "share counts the jobs kept in memory, got 7200"},
      {"retention: {finished_seconds: 1e8}",
       "t.yaml:1: retention: history_seconds must be >= finished_seconds (1e+08), got 2.592e+06"},
      {"alpha: [", "t.yaml:1: not valid YAML or JSON: end of sequence flow not found"},
      {"limits: {realtime_node_names: 0}",
       "t.yaml:1: limits: realtime_node_names must be a whole number from 1 to 1000000, got 0"},
      // A config alloxd could not run: refused here, so `allox validate` says so too.
      {"nodes:\n  - {name: a, machines: {gpu: 100000, cpu: 100000}}",
       "t.yaml:2: nodes: 200000 machines in all, over the 100000 alloxd keeps"},
      {"policy: nope",
       "t.yaml:1: policy must be one of allox, fifo, sjf, drf, drf-ext, drffifo, es, srpt, las, "
       "maxmin, es-fastest, drf-ext-fastest, got \"nope\""},
      {"listen: example.com:8888",
       "t.yaml:1: listen must be host:port whose host is an IP address (alloxd resolves no "
       "names; 127.0.0.1, 0.0.0.0, [::1]), got \"example.com:8888\""},
      {"listen: 127.0.0.1:8888\nreports_listen: 127.0.0.1:8888",
       "t.yaml:2: reports_listen must differ from listen, got the same address"},
      {"devices:\n  - {resource: nvidia.com/gpu, device: cpu}",
       "t.yaml:2: devices[0]: device cpu is the CPU bundles' type (cpu.device); give "
       "nvidia.com/gpu a type of its own"},
      {"devices:\n  - {resource: nvidia.com/gpu, device: gpu}\n  - {resource: nvidia.com/gpu, "
       "device: tpu}",
       "t.yaml:3: devices[1]: resource nvidia.com/gpu is already mapped by devices[0]; a "
       "resource names one device type"},
      {"devices:\n  - {resource: cpu, device: fast}",
       "t.yaml:2: devices[0]: resource cpu is counted in CPU bundles (the cpu section); map "
       "extended resources such as nvidia.com/gpu here"},
      {"cpu: {cores_per_machine: 1e-300}",
       "t.yaml:1: cpu: cores_per_machine must be a number of cores from 0.001 to 1e6, got 1e-300"},
      {"limits: {unread_bytes: 5}",
       R"(t.yaml:1: limits: unknown key "unread_bytes" (expected one of: unread_reply_bytes, )"
       R"(apiserver_reply_bytes, realtime_filter_body_bytes, realtime_node_names))"},
  };
  for (const Case& c : cases) {
    auto config = parse_extender_config(c.yaml, "t.yaml");
    ASSERT_FALSE(config.ok()) << c.yaml;
    EXPECT_EQ(c.error, config.message()) << c.yaml;
  }
}

// Every problem is reported at once, each on the line that holds it.
TEST(ConfigTest, ReportsEveryProblemWithItsLine) {
  auto config = parse_extender_config(R"(listen: 127.0.0.1:8888
alpha: 2
tick: 5
nodes:
  - name: a
    machines: {gpu: 2}
  - name: b
    machines: {gpu: lots}
)",
                                      "alloxd.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(
      "alloxd.yaml:2: alpha must be a number in (0, 1], got 2\n"
      "alloxd.yaml:8: node \"b\": machines.gpu must be a whole number from 0 to 100000, got "
      "\"lots\"",
      config.message());
}

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("allox-config-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  std::filesystem::path dir_;
};

TEST_F(ConfigFileTest, TokenFilesAreReadAndTrimmed) {
  const std::string admin = write("admin", "  s3cret\n");
  const std::string sa = write("sa", "jwt.token.here\n");
  auto config = parse_extender_config(
      "admin_token_file: " + admin + "\napiserver: {url: 'https://k/', token_file: " + sa + "}\n",
      "t.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  EXPECT_EQ("s3cret", config->admin_token);
  EXPECT_EQ("jwt.token.here", config->apiserver->token);
  EXPECT_EQ("https://k", config->apiserver->url);
}

TEST_F(ConfigFileTest, EmptyOrHugeTokenFileIsAnError) {
  const std::string empty = write("empty", " \n");
  auto config = parse_extender_config("admin_token_file: " + empty, "t.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ("t.yaml:1: admin_token_file must name a file holding a token, got \"" + empty +
                "\", which is empty",
            config.message());

  const std::string huge = write("huge", "");
  std::filesystem::resize_file(huge, 1 << 20);  // sparse: costs nothing
  config = parse_extender_config("admin_token_file: " + huge, "t.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ("t.yaml:1: admin_token_file must name a readable token file: " + huge +
                ": file is 1.0 MiB, over the 65536 bytes limit for input files",
            config.message());
}

// The config file itself goes through core's input-file limit, refused before it is read.
TEST_F(ConfigFileTest, OversizedConfigFileIsRefused) {
  const std::string path = write("alloxd.yaml", "");
  std::filesystem::resize_file(path, kMaxInputBytes + 1);
  auto config = load_extender_config(path);
  ASSERT_FALSE(config.ok());
  EXPECT_NE(std::string::npos, config.message().find(path + ": file is 32.0 MiB"))
      << config.message();
  EXPECT_EQ(path + ".missing: no such file", load_extender_config(path + ".missing").message());
}

// A config path that names something other than a regular file is refused at once: a FIFO
// never blocks start-up waiting for a writer, a directory and /dev/null are named as such.
TEST_F(ConfigFileTest, NonRegularConfigFilesAreRefusedWithoutBlocking) {
  const std::string fifo = (dir_ / "fifo.yaml").string();
  ASSERT_EQ(0, ::mkfifo(fifo.c_str(), 0600));
  EXPECT_EQ(fifo + ": is a FIFO, expected a regular file", load_extender_config(fifo).message());
  EXPECT_EQ(dir_.string() + ": is a directory, expected a regular file",
            load_extender_config(dir_.string()).message());
  EXPECT_EQ("/dev/null: is a character device, expected a regular file",
            load_extender_config("/dev/null").message());
  const std::string empty = write("empty.yaml", "");
  EXPECT_EQ(empty +
                ":1: the config is empty; give at least one setting, or {} to start on every "
                "default",
            load_extender_config(empty).message());
  // A token file is read the same way.
  auto config = parse_extender_config("admin_token_file: " + fifo, "t.yaml");
  EXPECT_EQ("t.yaml:1: admin_token_file must name a readable token file: " + fifo +
                ": is a FIFO, expected a regular file",
            config.message());
}

// A config symlinked to some other file (a secret) is refused without a byte of it in the error.
TEST_F(ConfigFileTest, AConfigLinkedToASecretFileIsNotQuoted) {
  const std::string secrets[] = {
      "SECRET-one-4f2a\nSECRET-two-99b1\n",
      "-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETb3BlbnNzaC1rZXktdjEAAAAA\n"
      "-----END OPENSSH PRIVATE KEY-----\n",
      "DB_PASSWORD=SECRET-hunter2\nAPI_KEY=SECRET-abc\n",
      "password: SECRET-hunter2\nuser: SECRET-admin\n",
      "- SECRET-a\n- SECRET-b\n",
      "SECRET: [unclosed\n",
  };
  for (const std::string& secret : secrets) {
    const std::string target = write("secret", secret);
    const std::filesystem::path link = dir_ / "alloxd.yaml";
    std::filesystem::remove(link);
    std::filesystem::create_symlink(target, link);
    auto config = load_extender_config(link.string());
    ASSERT_FALSE(config.ok()) << secret;
    EXPECT_EQ(std::string::npos, config.message().find("SECRET")) << config.message();
    EXPECT_EQ(0u, config.message().rfind(link.string() + ":", 0)) << config.message();
  }
  // A token file's contents are never quoted either, even when they are not a token.
  const std::string token = write("token", "SECRET part-two\n");
  auto config = parse_extender_config("admin_token_file: " + token, "t.yaml");
  EXPECT_EQ("t.yaml:1: admin_token_file must name a file holding one token, got \"" + token +
                "\", which holds spaces or control characters",
            config.message());
}

TEST(ConfigTest, ListenAddressOverride) {
  ExtenderConfig config;
  ASSERT_TRUE(set_listen_address(config, "127.0.0.1:0").ok());
  EXPECT_EQ(0, config.listen_port);
  EXPECT_FALSE(set_listen_address(config, "127.0.0.1:x").ok());
  EXPECT_FALSE(set_listen_address(config, ":80").ok());
  EXPECT_FALSE(set_listen_address(config, "localhost:80").ok()) << "alloxd resolves no names";
  ASSERT_TRUE(set_listen_address(config, "[::1]:8080").ok());
  EXPECT_EQ("::1", config.listen_host);
  EXPECT_EQ(8080, config.listen_port);
}

// GPU models as node labels: each rule gives the nodes of one label value a type of its own; the
// resource's plain type stays for nodes matching none, and a pod of the plain type may run on all.
TEST(ConfigTest, NodeLabelsGiveGpuModelsTheirOwnTypes) {
  auto config = parse_extender_config(R"(
devices:
  - resource: nvidia.com/gpu
    device: gpu
    node_labels:
      - {label: nvidia.com/gpu.product, value: NVIDIA-H100-80GB-HBM3, device: h100}
      - {label: nvidia.com/gpu.product, value: NVIDIA-A100-SXM4-40GB, device: a100}
      - {label: nvidia.com/gpu.product, value: NVIDIA-A100-PCIE-40GB, device: a100}
  - {resource: example.com/tpu, device: tpu}
)",
                                      "t.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  const DeviceMapping& d = config->devices;
  EXPECT_EQ("gpu", d.device_for("nvidia.com/gpu").value());
  EXPECT_EQ("nvidia.com/gpu", d.resource_for("h100"));
  EXPECT_EQ("nvidia.com/gpu", d.resource_for("a100"));
  EXPECT_EQ((std::vector<DeviceType>{"gpu", "h100", "a100"}), d.interchangeable("gpu"));
  EXPECT_EQ((std::vector<DeviceType>{"h100"}), d.interchangeable("h100"));
  EXPECT_EQ((std::vector<DeviceType>{"tpu"}), d.interchangeable("tpu"));

  struct Case {
    std::map<std::string, std::string> labels;
    std::string resource;
    std::optional<DeviceType> want;
  };
  const Case cases[] = {
      {{{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}, "nvidia.com/gpu", "h100"},
      {{{"nvidia.com/gpu.product", "NVIDIA-A100-PCIE-40GB"}}, "nvidia.com/gpu", "a100"},
      {{{"nvidia.com/gpu.product", "Tesla-T4"}}, "nvidia.com/gpu", "gpu"},
      {{}, "nvidia.com/gpu", "gpu"},
      {{{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}, "example.com/tpu", "tpu"},
      {{}, "example.com/other", std::nullopt},
  };
  for (const Case& c : cases) {
    auto got = d.node_device(c.resource, c.labels);
    ASSERT_TRUE(got.ok()) << got.message();
    EXPECT_EQ(c.want, *got) << c.resource << " "
                            << (c.labels.empty() ? "" : c.labels.begin()->second);
  }
}

// Rules on two label keys may both match one node: that node is refused, naming both labels.
TEST(ConfigTest, ANodeTwoRulesGiveTwoTypesIsAnError) {
  auto config = parse_extender_config(R"(
devices:
  - resource: nvidia.com/gpu
    device: gpu
    node_labels:
      - {label: nvidia.com/gpu.product, value: NVIDIA-H100-80GB-HBM3, device: h100}
      - {label: cloud.google.com/gke-accelerator, value: nvidia-tesla-a100, device: a100}
)",
                                      "t.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  auto got = config->devices.node_device(
      "nvidia.com/gpu", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                         {"cloud.google.com/gke-accelerator", "nvidia-tesla-a100"}});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(
      "nvidia.com/gpu: labels nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 and "
      "cloud.google.com/gke-accelerator=nvidia-tesla-a100 give two device types (h100, a100)",
      got.message());
}

TEST(ConfigTest, BadNodeLabelRulesNameTheField) {
  struct Case {
    std::string rules;
    std::string error;
  };
  const std::string head =
      "devices:\n  - resource: nvidia.com/gpu\n    device: gpu\n    node_labels:\n";
  const Case cases[] = {
      {"      - {label: k, value: v, device: h100, extra: 1}\n",
       "t.yaml:5: devices[0].node_labels[0]: unknown key \"extra\" (expected one of: label, value, "
       "device)"},
      {"      - {label: k, value: '', device: h100}\n",
       "t.yaml:5: devices[0].node_labels[0]: value must be a non-empty string, got \"\""},
      {"      - {label: k, device: h100}\n",
       "t.yaml:5: devices[0].node_labels[0]: value is required"},
      {"      - {label: k, value: v, device: h100}\n      - {label: k, value: v, device: a100}\n",
       "t.yaml:6: devices[0].node_labels[1]: nodes labelled k=v are given a type twice (h100, "
       "then a100)"},
      {"      - {label: k, value: v, device: gpu}\n",
       "t.yaml:5: devices[0].node_labels[0]: device must differ from the resource's plain device "
       "gpu (nodes matching no rule are gpu already), got gpu"},
      {"      - {label: k, value: v, device: cpu}\n",
       "t.yaml:5: devices[0].node_labels[0]: device cpu is already cpu's plain device; a type "
       "names one resource"},
      {"      - {label: k, value: v, device: H100}\n",
       "t.yaml:5: devices[0].node_labels[0]: device must be a device type name (lowercase "
       "letters, digits, '-', '_', '.'; at most 63 characters), got \"H100\""},
  };
  for (const Case& c : cases) {
    auto config = parse_extender_config(head + c.rules, "t.yaml");
    ASSERT_FALSE(config.ok()) << c.rules;
    EXPECT_EQ(c.error, config.message()) << c.rules;
  }
  // A label type may belong to one resource only.
  auto shared = parse_extender_config(R"(
devices:
  - resource: nvidia.com/gpu
    device: gpu
    node_labels: [{label: k, value: v, device: fast}]
  - resource: amd.com/gpu
    device: amd
    node_labels: [{label: k, value: w, device: fast}]
)",
                                      "t.yaml");
  ASSERT_FALSE(shared.ok());
  EXPECT_EQ(
      "t.yaml:8: devices[1].node_labels[0]: device fast is already nvidia.com/gpu's label type; "
      "a type names one resource",
      shared.message());
}

TEST(ConfigTest, ThroughputsLoadGavelsTableOrNameTheField) {
  auto config = parse_extender_config(
      "throughputs: " + std::string(ALLOX_SOURCE_DIR) + "/data/gavel/simulation_throughputs.json",
      "t.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  ASSERT_NE(nullptr, config->throughputs);
  EXPECT_GT(config->throughputs->size(), 0u);
  auto missing = parse_extender_config("throughputs: /nonexistent/table.json", "t.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string::npos, missing.message().find("t.yaml:1: throughputs: "))
      << missing.message();
}

// The shipped example of GPU models: its throughput table path is relative to the checkout.
TEST(ConfigTest, GpuModelsExampleLoads) {
  std::ifstream in(ALLOX_SOURCE_DIR "/examples/gpu-models/alloxd.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string relative = "throughputs: data/";
  const auto at = text.find(relative);
  ASSERT_NE(std::string::npos, at);
  text.replace(at, relative.size(), "throughputs: " + std::string(ALLOX_SOURCE_DIR) + "/data/");
  auto config = parse_extender_config(text, "alloxd.yaml");
  ASSERT_TRUE(config.ok()) << config.message();
  EXPECT_EQ((std::vector<DeviceType>{"gpu", "v100", "p100", "k80"}),
            config->devices.interchangeable("gpu"));
  ASSERT_NE(nullptr, config->throughputs);
  EXPECT_EQ(8, config->nodes.at(2).machines.at("k80"));
}

}  // namespace
}  // namespace allox::extender
