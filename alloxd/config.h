// alloxd's configuration file (YAML), validated once at start-up.
//
//   listen: 127.0.0.1:8888          # address:port; port 0 picks a free one
//   reports_listen: 0.0.0.0:9090    # optional second listener, GET only (reports, probes)
//   database: alloxd.db             # SQLite file (WAL); ":memory:" keeps nothing
//   policy: allox                   # any fairness/policy.h name
//   alpha: 0.5                      # AlloX fairness knob, (0, 1]
//   starvation_bound: 3600          # seconds
//   batch_rounds: false             # allox: start every job a round's plan puts first on an
//                                   # idle machine, not one per matcher solve (the paper's)
//   tick: 5                         # seconds between scheduling rounds at the latest
//   default_job_seconds: 3600       # estimate for a variant with no hint and no profile
//   fairness_window: 3600           # seconds behind /v1/fairness's windowed share, at most
//                                   # retention.finished_seconds
//   max_body_bytes: 1048576         # larger requests get 413
//   http_threads: 4                 # HTTP I/O threads (each owns its connections); on a
//                                   # 2-core container 2 did as well or slightly better at
//                                   # 5,000 nodes (docs/performance.md)
//   request_threads: normal         # normal | auto | realtime: the class of the threads that
//                                   # answer kube-scheduler (request_threads.h). An operator's
//                                   # opt-in: auto is real-time (SCHED_FIFO) when the kernel
//                                   # grants it and `listen` is on loopback
//   admin_token: s3cret             # or admin_token_file; required by the POST /v1 endpoints
//   devices:                        # resource name -> device type
//     - resource: nvidia.com/gpu
//       device: gpu                 # nodes whose labels match no rule below
//       node_labels:                # optional: a GPU model per node label, each its own type
//         - {label: nvidia.com/gpu.product, value: NVIDIA-H100-80GB-HBM3, device: h100}
//         - {label: nvidia.com/gpu.product, value: NVIDIA-A100-SXM4-40GB, device: a100}
//   throughputs: data/gavel/simulation_throughputs.json   # optional: Gavel's steps/s table,
//                                   # times for pods naming allox.io/model (model/pod.h)
//   cpu: {device: cpu, cores_per_machine: 32}   # a CPU machine is a bundle of this many cores
//   nodes:                          # inventory; ignored when apiserver is set
//     - {name: node-1, machines: {gpu: 2, cpu: 1}}
//   tenancy:                        # who is charged (default: a pod's namespace)
//     users: {team-a: alice}        # namespace -> user
//     user_annotation_namespaces: [lab]   # namespaces whose pods may set allox.io/user
//   retention:
//     finished_seconds: 3600        # a finished job stays in memory (reports, /v1/jobs) this long
//     history_seconds: 2592000      # and in the SQLite history this long
//   log: {level: info, format: text}   # debug|info|warn|error; text (klog) or json lines
//   apiserver:                      # optional: watch allox's pods and the nodes, bind, act
//     url: https://kubernetes.default.svc
//     token_file: /var/run/secrets/kubernetes.io/serviceaccount/token   # or token
//     ca_file: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
//     lease: {namespace: allox-system, name: alloxd}   # optional: only the holder acts
//   scheduler_name: allox-scheduler # allox's pods; others pass through (unset: every pod;
//                                   # allox-scheduler when apiserver is set)
//   webhook:                        # optional: the gate admission webhook (POST /admission/gate)
//     listen: 0.0.0.0:8443
//     tls_cert_file: /etc/allox/webhook-tls/tls.crt   # with tls_key_file: HTTPS
//     tls_key_file: /etc/allox/webhook-tls/tls.key
//   limits:                         # what one client, request or API server may cost
//     unread_reply_bytes: 1048576   # a reply a client leaves unread beyond a moment: reset
//     apiserver_reply_bytes: 33554432   # the largest API-server answer read (a LIST page)
//     realtime_filter_body_bytes: 262144   # with real-time request threads only: a larger
//     realtime_node_names: 5000     # /filter or /prioritize body, or more node names, is 413
//
// Read through core's FieldReader (core/yaml_fields.h) and input-file limit (core/input_file.h):
// unknown keys, keys given twice, wrong types and out-of-range values are errors in the style of
// every other input file, "alloxd.yaml:7: node \"a\": machines.gpu must be a whole number from 0
// to 100000, got -1", all of them at once. Durations are bounded both ways (tick from 0.05 to
// 3600 s, default_job_seconds from 1 ms to 30 days, the others at most ten years); the API
// server URL needs a host; tokens (inline or from a file) must be non-blank with no spaces or
// control characters, and are never quoted. The config and token files must be regular files
// (a FIFO is refused without blocking; token files under a 64 KiB limit). An empty config is an
// error (`{}` asks for every default), and a document with none of alloxd's keys at top level is
// refused as "not an alloxd config" without quoting any of it: a path pointing at some other file
// (a secret) never has its lines echoed. Thread-safe: pure functions; a loaded config is an
// immutable value.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alloxd/http/request_threads.h"
#include "alloxd/model/pod.h"
#include "core/log.h"
#include "core/model.h"
#include "core/result.h"
#include "kube/node_fit.h"
#include "profiler/throughput_table.h"

namespace allox::extender {

// Which device type a node's units of a resource are. A resource maps to its plain type
// (nvidia.com/gpu -> gpu); rules on node labels give the nodes of one GPU model a type of their
// own (nodes labelled nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 -> h100), so a cluster of
// several models offers several interchangeable types of one resource. A pod that requests the
// resource without pinning a model can run on any of them (model/pod.h); the policy picks.
//
// Validated at load: within a resource, one label key and value gives one type, and a rule's
// type is neither the plain type, the CPU device nor another resource's type. Rules on two
// different label keys could both match one node with two types: that node is refused when it is
// read (node_device), never split between them.
struct DeviceMapping {
  struct NodeLabelRule {
    std::string label;  // e.g. nvidia.com/gpu.product
    std::string value;  // e.g. NVIDIA-H100-80GB-HBM3
    DeviceType device;  // e.g. h100
  };
  struct Resource {
    std::string resource;                         // e.g. nvidia.com/gpu
    DeviceType device;                            // e.g. gpu: nodes matching no rule
    std::vector<NodeLabelRule> node_labels = {};  // in config order
  };
  std::vector<Resource> resources = {
      {"nvidia.com/gpu", "gpu", {}}};  // a config's devices replace it
  DeviceType cpu_device = "cpu";
  double cores_per_machine = 32;

  // The plain device a resource name maps to, if any.
  std::optional<DeviceType> device_for(const std::string& resource) const;
  // The resource name people know a device by ("nvidia.com/gpu", for gpu and its label types;
  // "cpu" for the CPU device).
  std::string resource_for(const DeviceType& device) const;
  // The resource entry whose plain type or label type is `device`; null when none.
  const Resource* resource_of(const DeviceType& device) const;
  // The type a node labelled `labels` offers `resource` as: the matching rule's, else the plain
  // type; std::nullopt when the resource is not mapped. An error names both labels when rules
  // of two label keys match the node with two different types.
  Expected<std::optional<DeviceType>> node_device(
      const std::string& resource, const std::map<std::string, std::string>& labels) const;
  // Every type a pod of `device` that pins no model can run on: for a resource's plain type,
  // that type and each of its label types (in config order, once each); otherwise {device}.
  std::vector<DeviceType> interchangeable(const DeviceType& device) const;
};

struct NodeInventory {
  std::string name;
  std::map<DeviceType, int> machines;  // device type -> number of machines on the node
  // What the Node object says about which pods may go there (labels, taints, cordon), read by
  // the plan's node choice and the pin (docs/design.md, "Nodes a pod may go to"). Empty for a
  // node of the config's fixed inventory.
  kube::NodeFacts facts{};
  // Why the node takes no new job (cordoned, or a taint of Kubernetes' own saying it is not
  // ready or unreachable); its machines are then left out (`machines` empty). Empty otherwise.
  std::string closed{};
  bool operator==(const NodeInventory&) const = default;
};

// The coordination.k8s.io/v1 Lease whose holder acts on the cluster.
struct LeaseConfig {
  std::string namespace_name = "allox-system";
  std::string name = "alloxd";
};

struct ApiServerConfig {
  std::string url;
  std::string token;  // read from token_file when that is given
  std::string ca_file;
  std::optional<LeaseConfig> lease;  // unset: this replica always acts
};

struct ListenAddress {
  std::string host;
  int port = 0;
};

struct WebhookConfig {
  ListenAddress listen;
  std::string tls_cert_file, tls_key_file;  // both empty: plain HTTP (tests only)
};

struct Retention {
  double finished_seconds = 3600;
  double history_seconds = 30 * 24 * 3600;
};

// Bounds on what one party may cost alloxd (http_server.h, kube/client.h, routes.h).
struct Limits {
  std::size_t unread_reply_bytes = 1 << 20;
  std::size_t apiserver_reply_bytes = 32 << 20;
  // Real-time request threads run ahead of every normal process on the node: one /filter or
  // /prioritize may then carry at most this much (5,000 nodes' NodeNames are about 70 KB).
  std::size_t realtime_filter_body_bytes = 256 << 10;
  std::size_t realtime_node_names = 5000;
};

struct ExtenderConfig {
  std::string listen_host = "127.0.0.1";
  int listen_port = 8888;
  std::optional<ListenAddress> reports_listen;
  std::string database = "alloxd.db";
  std::string policy = "allox";
  double alpha = 0.5;
  double starvation_bound = 3600;
  // allox: PolicyOptions::batch_rounds. Off is the paper's one start per matcher solve, which
  // costs one solve per start: thousands per round when thousands of machines are idle.
  bool batch_rounds = false;
  double tick = 5;
  double default_job_seconds = 3600;
  double fairness_window = 3600;  // seconds: the windowed share of GET /v1/fairness
  std::size_t max_body_bytes = 1 << 20;
  int http_threads = 4;
  // The class of the threads that answer kube-scheduler (request_threads.h): normal unless the
  // operator opts in to real-time (auto or realtime).
  RequestThreads request_threads = RequestThreads::kNormal;
  std::string admin_token;
  DeviceMapping devices;
  // Gavel's measured steps/s per model and device type (profiler/throughput_table.h), read from
  // `throughputs` at load; null when the config names none.
  std::shared_ptr<const ThroughputTable> throughputs;
  std::vector<NodeInventory> nodes;
  Tenancy tenancy;
  Retention retention;
  LogOptions log{.program = "alloxd"};
  std::optional<ApiServerConfig> apiserver;
  std::string scheduler_name;  // empty: every pod is allox's
  std::optional<WebhookConfig> webhook;
  Limits limits;
};

// Loads and validates a config file. Relative paths inside (database, token_file, ca_file) are
// taken relative to the current directory.
Expected<ExtenderConfig> load_extender_config(const std::string& path);
// The same from YAML text; `source` names it in error messages.
Expected<ExtenderConfig> parse_extender_config(const std::string& yaml, const std::string& source);

// Reads "host:port" (port 0 picks a free port). The error completes "... must be " / "expected ".
Expected<ListenAddress> parse_listen_address(const std::string& address);
// Sets listen_host and listen_port from "host:port".
Status set_listen_address(ExtenderConfig& config, const std::string& address);

}  // namespace allox::extender
