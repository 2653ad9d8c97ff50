#include "alloxd/model/pod.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "alloxd/config.h"
#include "alloxd/model/pod_devices.h"
#include "alloxd/model/pod_placement.h"
#include "core/number_text.h"
#include "core/utf8.h"
#include "extender_api/wire.h"
#include "kube/quantity.h"

namespace allox::extender {
namespace {

using kube::parse_quantity;

using nlohmann::json;

constexpr std::string_view kAnnotationPrefix = "allox.io/";
constexpr std::string_view kTimePrefix = "allox.io/time.";

// A positive whole number that fits int64: "1000", "1e3" and "1000.0" read as 1000.
std::optional<std::int64_t> parse_iterations(std::string_view text) {
  std::int64_t whole = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), whole);
  if (ec == std::errc() && end == text.data() + text.size()) {
    return whole >= 1 ? std::optional(whole) : std::nullopt;
  }
  auto n = parse_finite_number(text);
  // 2^63 is exactly representable; anything at or above it does not fit.
  if (!n || *n < 1 || *n != std::floor(*n) || *n >= 9223372036854775808.0) return std::nullopt;
  return static_cast<std::int64_t>(*n);
}

// How a value appears in an error: quoted, and cut to its first 64 bytes with its size when
// longer, so a 100 KB annotation never comes back in every node's filter reason.
std::string shown_value(std::string_view text) {
  constexpr std::size_t kShown = 64;
  std::string out = "\"";
  for (char c : text.substr(0, kShown)) {
    const auto byte = static_cast<unsigned char>(c);
    out += byte < 0x20 || byte == 0x7f ? '?' : c;
  }
  out += '"';
  if (text.size() > kShown) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

bool has_control_character(std::string_view text) {
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return true;
  }
  return false;
}

// Why a label-like value (a user, a device type) is unusable, if it is.
std::optional<std::string> label_problem(std::string_view text) {
  if (text.size() > kMaxLabelLength) {
    return std::to_string(text.size()) + " bytes, over Kubernetes' limit of " +
           std::to_string(kMaxLabelLength) + " for label values";
  }
  if (has_control_character(text)) return std::string("holds a control character");
  return std::nullopt;
}

std::string string_at(const json& object, std::string_view key) {
  const json* value = find_key(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

// The quantities of a resource list (`limits`, `requests`, `overhead`) into `out`, each
// replacing what `out` held; `where` names the list in errors.
Status read_quantities(const json& list, const std::string& where,
                       std::map<std::string, double>& out) {
  if (!list.is_object()) return OkStatus();
  for (const auto& [name, quantity] : list.items()) {
    if (quantity.is_string()) {
      auto parsed = parse_quantity(quantity.get<std::string>());
      if (!parsed) return Error{where + "." + name + ": " + parsed.message()};
      out[name] = *parsed;
    } else if (quantity.is_number()) {
      out[name] = quantity.get<double>();
    } else {
      return Error{where + "." + name + ": expected a quantity"};
    }
  }
  return OkStatus();
}

// One container's requests, limits standing in for missing requests (as the API server
// defaults them). `where` names the container in errors: "Pod.spec.containers[0]".
Expected<std::map<std::string, double>> container_requests(const json& container,
                                                           const std::string& where) {
  std::map<std::string, double> own;
  if (!container.is_object()) return own;
  const json* resources = find_key(container, "resources");
  if (resources == nullptr || !resources->is_object()) return own;
  for (const char* kind : {"limits", "requests"}) {  // requests override limits
    const json* list = find_key(*resources, kind);
    if (list == nullptr) continue;
    if (Status s = read_quantities(*list, where + ".resources." + kind, own); !s) {
      return s.error();
    }
  }
  return own;
}

// What kube-scheduler's NodeResourcesFit counts for a pod: the sum over its containers and its
// sidecars (init containers with restartPolicy Always, which run beside them), or, where more,
// what one init container needs while the sidecars started before it run; plus spec.overhead.
// A pod whose init container asks for 4 GPUs holds 4 on its node however little the main
// container asks.
Expected<std::map<std::string, double>> requested_resources(const json& pod) {
  std::map<std::string, double> total;
  const json* spec = find_key(pod, "spec");
  if (spec == nullptr || spec->is_null()) return total;
  // A field of the wrong kind is refused, not read as absent: a pod whose containers are not a
  // list would otherwise ask for nothing and be booked as the smallest CPU job.
  if (!spec->is_object()) return Error{"Pod.spec: expected an object"};
  for (const char* list : {"containers", "initContainers"}) {
    const json* field = find_key(*spec, list);
    if (field != nullptr && !field->is_null() && !field->is_array()) {
      return Error{std::string("Pod.spec.") + list + ": expected a list"};
    }
  }
  if (const json* containers = find_key(*spec, "containers");
      containers != nullptr && containers->is_array()) {
    for (std::size_t i = 0; i < containers->size(); ++i) {
      auto own =
          container_requests((*containers)[i], "Pod.spec.containers[" + std::to_string(i) + "]");
      if (!own) return own.error();
      for (const auto& [name, amount] : *own) total[name] += amount;
    }
  }
  std::map<std::string, double> sidecars;  // the sidecars started so far
  std::map<std::string, double> init_peak;
  if (const json* inits = find_key(*spec, "initContainers");
      inits != nullptr && inits->is_array()) {
    for (std::size_t i = 0; i < inits->size(); ++i) {
      const json& init = (*inits)[i];
      auto own = container_requests(init, "Pod.spec.initContainers[" + std::to_string(i) + "]");
      if (!own) return own.error();
      const bool sidecar = init.is_object() && string_at(init, "restartPolicy") == "Always";
      if (sidecar) {
        for (const auto& [name, amount] : *own) {
          total[name] += amount;
          sidecars[name] += amount;
        }
      }
      // While this one runs: itself (a sidecar: itself among the sidecars) and the sidecars
      // before it.
      std::map<std::string, double> running = sidecars;
      if (!sidecar) {
        for (const auto& [name, amount] : *own) running[name] += amount;
      }
      for (const auto& [name, amount] : running) {
        init_peak[name] = std::max(init_peak[name], amount);
      }
    }
  }
  for (const auto& [name, amount] : init_peak) total[name] = std::max(total[name], amount);
  if (const json* overhead = find_key(*spec, "overhead");
      overhead != nullptr && overhead->is_object()) {
    std::map<std::string, double> own;
    if (Status s = read_quantities(*overhead, "Pod.spec.overhead", own); !s) return s.error();
    for (const auto& [name, amount] : own) total[name] += amount;
  }
  return total;
}

// A number as its shortest round-trip text: 1.5, 64, 1e+300.
std::string shown_number(double x) {
  char text[32];
  auto [end, ec] = std::to_chars(text, text + sizeof text, x);
  return ec == std::errc() ? std::string(text, end) : std::string("?");
}

// How many units of `device` the pod's requests ask for (pod.h, "Units").
Expected<int> requested_units(const json& pod, const DeviceType& device,
                              const DeviceMapping& mapping) {
  auto requests = requested_resources(pod);
  if (!requests) return requests.error();
  const std::string where = "Pod.spec.containers.resources.";
  const std::string limit = ", over allox's limit of " + std::to_string(kMaxUnits) + " on one node";
  double amount = 0;
  std::string resource;
  if (device == mapping.cpu_device) {
    resource = "cpu";
    if (auto cores = requests->find(resource); cores != requests->end()) amount = cores->second;
  } else {
    // A GPU model (a label type) counts its resource's requests, as its plain type does.
    const DeviceMapping::Resource* own = mapping.resource_of(device);
    const DeviceType& plain = own != nullptr ? own->device : device;
    for (const DeviceMapping::Resource& r : mapping.resources) {
      auto found = requests->find(r.resource);
      if (r.device != plain || found == requests->end()) continue;
      resource = r.resource;
      amount += found->second;
    }
  }
  if (!std::isfinite(amount) || amount < 0) {
    return Error{where + resource + ": " + shown_number(amount) + " is not a device count"};
  }
  if (device == mapping.cpu_device) {
    const double bundles = std::max(1.0, std::ceil(amount / mapping.cores_per_machine));
    if (bundles > kMaxUnits) {
      return Error{where + "cpu: " + shown_number(amount) + " cores are " + shown_number(bundles) +
                   " CPU bundles of " + shown_number(mapping.cores_per_machine) + limit};
    }
    return static_cast<int>(bundles);
  }
  if (amount != std::floor(amount)) {
    return Error{where + resource + ": " + shown_number(amount) + " is not a whole number of " +
                 device + " devices"};
  }
  if (amount > kMaxUnits) {
    return Error{where + resource + ": " + shown_number(amount) + " " + device + " devices" +
                 limit};
  }
  return std::max(1, static_cast<int>(amount));
}

}  // namespace

Expected<PodIdentity> pod_identity(const json& pod) {
  if (!pod.is_object()) return Error{"Pod: expected an object"};
  const json* metadata = find_key(pod, "metadata");
  if (metadata == nullptr || metadata->is_null()) return Error{"Pod.metadata: missing"};
  if (!metadata->is_object()) return Error{"Pod.metadata: expected an object"};
  const json* name = find_key(*metadata, "name");
  if (name == nullptr || !name->is_string() || name->get<std::string>().empty()) {
    return Error{"Pod.metadata.name: missing"};
  }
  const std::string& pod_name = name->get_ref<const std::string&>();
  if (pod_name.size() > kMaxNameLength) {
    return Error{"Pod.metadata.name: " + std::to_string(pod_name.size()) +
                 " bytes, over Kubernetes' limit of " + std::to_string(kMaxNameLength) +
                 " for names"};
  }
  PodIdentity id;
  id.name = pod_name;
  id.namespace_name = string_at(*metadata, "namespace");
  if (id.namespace_name.empty()) id.namespace_name = "default";
  if (auto problem = label_problem(id.namespace_name)) {
    return Error{"Pod.metadata.namespace: " + *problem};
  }
  id.uid = string_at(*metadata, "uid");
  if (id.uid.size() > kMaxNameLength) return Error{"Pod.metadata.uid: too long for a UID"};
  return id;
}

Status check_job_id(std::string_view id) {
  const std::size_t slash = id.find('/');
  if (slash == std::string_view::npos) return Error{"expected <namespace>/<name>, got no '/'"};
  const std::string_view namespace_name = id.substr(0, slash);
  const std::string_view name = id.substr(slash + 1);
  if (name.find('/') != std::string_view::npos) {
    return Error{"has a '/' beyond the one between namespace and name"};
  }
  if (namespace_name.empty() || name.empty()) {
    return Error{"expected <namespace>/<name>, got an empty " +
                 std::string(namespace_name.empty() ? "namespace" : "name")};
  }
  for (std::string_view segment : {namespace_name, name}) {
    if (segment == "." || segment == "..")
      return Error{"has a \"" + std::string(segment) + "\" segment"};
  }
  if (namespace_name.size() > kMaxLabelLength) {
    return Error{"namespace of " + std::to_string(namespace_name.size()) +
                 " bytes, over Kubernetes' limit of " + std::to_string(kMaxLabelLength)};
  }
  if (name.size() > kMaxNameLength) {
    return Error{"name of " + std::to_string(name.size()) + " bytes, over Kubernetes' limit of " +
                 std::to_string(kMaxNameLength) + " for names"};
  }
  if (has_control_character(id)) return Error{"holds a control character"};
  if (!valid_utf8(id)) return Error{"is not UTF-8 text"};
  return OkStatus();
}

std::string Tenancy::charged_user(const std::string& namespace_name,
                                  const std::string& annotated) const {
  if (!annotated.empty() && user_annotation_namespaces.count(namespace_name)) return annotated;
  auto mapped = namespace_users.find(namespace_name);
  return mapped != namespace_users.end() ? mapped->second : namespace_name;
}

std::string job_id_in_namespace(const std::string& namespace_name, const std::string& annotated) {
  const std::string prefix = namespace_name + "/";
  if (std::string_view(annotated).starts_with(prefix)) return annotated;
  return prefix + annotated;
}

namespace {

// What a pod's allox.io/ annotations say, before the job id and user are settled.
struct Annotated {
  std::string job;     // allox.io/job, empty when absent
  std::string user;    // allox.io/user, empty when absent
  std::string device;  // allox.io/device, empty when absent
};

// Reads one allox.io/ annotation into `variant` or `annotated`; an error names the annotation.
Status read_annotation(const std::string& key, const json& value, JobVariant& variant,
                       Annotated& annotated) {
  // An annotation key is the pod's to choose too: a long one is cut like a value.
  const std::string named = key.size() <= kMaxNameLength ? key : shown_value(key);
  if (!value.is_string()) return Error{"annotation " + named + ": expected a string"};
  const std::string text = value.get<std::string>();
  const std::string where = "annotation " + named + ": ";
  if (key == "allox.io/job") {
    if (text.empty()) return Error{where + "empty job id"};
    annotated.job = text;
  } else if (key == "allox.io/user") {
    if (text.empty()) return Error{where + "empty user"};
    annotated.user = text;
  } else if (key == "allox.io/device") {
    if (auto problem = label_problem(text)) return Error{where + *problem};
    annotated.device = text;
  } else if (key == "allox.io/iterations") {
    auto n = parse_iterations(text);
    if (!n)
      return Error{where + shown_value(text) + " is not a positive whole number within int64"};
    variant.iterations = *n;
  } else if (key == "allox.io/model") {
    if (auto problem = label_problem(text); problem || text.empty()) {
      return Error{where + (problem ? *problem : std::string("empty model name"))};
    }
    variant.model = text;
  } else if (key == "allox.io/batch-size") {
    auto n = parse_iterations(text);
    if (!n || *n > 1'000'000) {
      return Error{where + shown_value(text) + " is not a whole number from 1 to 1000000"};
    }
    variant.batch_size = static_cast<int>(*n);
  } else if (key == kGangSizeAnnotation) {
    auto n = parse_iterations(text);
    if (!n || *n > kMaxGangSize) {
      return Error{where + shown_value(text) + " is not a whole number from 1 to " +
                   std::to_string(kMaxGangSize)};
    }
    variant.gang = static_cast<int>(*n);
  } else if (std::string_view(key).starts_with(kTimePrefix)) {
    const std::string device = key.substr(kTimePrefix.size());
    if (auto problem = label_problem(device))
      return Error{where + "the device type is " + *problem};
    auto seconds = parse_finite_number(text);
    if (!seconds || *seconds <= 0)
      return Error{where + shown_value(text) + " is not a number of seconds"};
    if (*seconds < kMinJobSeconds || *seconds > kMaxJobSeconds) {
      return Error{where + shown_value(text) +
                   " seconds is out of range: 0.001 to 2592000 (30 days)"};
    }
    variant.time_hints[device] = *seconds;
  }
  // Other allox.io/ annotations (allox.io/admitted, set by allox itself) carry no input.
  return OkStatus();
}

// The device type a pod without allox.io/device runs on, from what it requests, and the GPU
// models it may run on.
Status read_devices(const json& pod, const DeviceMapping& mapping, JobVariant& variant) {
  auto requests = requested_resources(pod);
  if (!requests) return requests.error();
  for (const auto& [resource, amount] : *requests) {
    if (amount <= 0) continue;
    if (auto device = mapping.device_for(resource)) {
      variant.device = *device;
      break;
    }
  }
  if (variant.device.empty()) variant.device = mapping.cpu_device;
  variant.devices = pod_device_types(pod, mapping, variant.device);
  // Pinned to one model: that type is the one it names.
  if (variant.devices.size() == 1) variant.device = variant.devices.front();
  return OkStatus();
}

}  // namespace

Expected<JobVariant> read_job_variant(const json& pod, const DeviceMapping& mapping,
                                      const Tenancy& tenancy) {
  auto id = pod_identity(pod);
  if (!id) return id.error();
  JobVariant variant;
  variant.pod = std::move(*id);
  Annotated annotated;
  const json* metadata = find_key(pod, "metadata");
  const json* annotations = find_key(*metadata, "annotations");
  if (annotations != nullptr && !annotations->is_null() && !annotations->is_object()) {
    return Error{"Pod.metadata.annotations: expected an object of strings"};
  }
  if (annotations != nullptr && annotations->is_object()) {
    for (const auto& [key, value] : annotations->items()) {
      if (!std::string_view(key).starts_with(kAnnotationPrefix)) continue;
      if (auto s = read_annotation(key, value, variant, annotated); !s) return s.error();
    }
  }
  const bool annotated_job = !annotated.job.empty();
  const std::string job_annotation = annotated_job ? annotated.job : variant.pod.name;
  const std::string& user_annotation = annotated.user;

  // The job id: the annotation names a job of the pod's own namespace ("train" or
  // "<namespace>/train"); any other '/' is refused rather than nested under the namespace.
  variant.job_id = job_id_in_namespace(variant.pod.namespace_name, job_annotation);
  if (auto s = check_job_id(variant.job_id); !s) {
    return Error{std::string(annotated_job ? "annotation allox.io/job" : "Pod.metadata.name") +
                 ": the job id " + s.message()};
  }
  // allox.io/user counts only where the tenancy lets a namespace name its user; elsewhere it is
  // ignored, whatever its size.
  if (!user_annotation.empty() &&
      tenancy.user_annotation_namespaces.count(variant.pod.namespace_name) != 0) {
    if (auto problem = label_problem(user_annotation)) {
      return Error{"annotation allox.io/user: " + *problem};
    }
  }
  variant.user = tenancy.charged_user(variant.pod.namespace_name, user_annotation);

  if (!annotated.device.empty()) {
    variant.device = annotated.device;
  } else if (auto s = read_devices(pod, mapping, variant); !s) {
    return s.error();
  }
  auto units = requested_units(pod, variant.device, mapping);
  if (!units) return units.error();
  variant.units = *units;
  if (auto s = check_pod_constraints(pod); !s) return s.error();
  PodConstraints constraints = read_pod_constraints(pod);
  variant.placement = std::move(constraints.placement);
  variant.placement_key = std::move(constraints.key);
  return variant;
}

}  // namespace allox::extender
