#include "alloxd/http/routes.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string_view>

#include "alloxd/model/pod.h"
#include "alloxd/verbs/admission.h"
#include "alloxd/web/status_page.h"
#include "core/model.h"
#include "core/thread_priority.h"

namespace allox::extender {
namespace {

using nlohmann::json;

HttpReply json_reply(int status, const json& body) {
  return {status, "application/json", body.dump(-1, ' ', false, json::error_handler_t::replace)};
}

HttpReply error_reply(int status, const std::string& message) {
  return json_reply(status, {{"error", message}});
}

constexpr std::string_view kJobsPrefix = "/v1/jobs/";
constexpr std::string_view kDoneSuffix = "/done";

// A job id from a path is checked before it is looked up: "team-b/../team-a/train" (sent as is,
// or with its dots percent-encoded) names no job and is refused as such, never normalised.
std::optional<HttpReply> bad_job_id(const std::string& id) {
  if (auto s = check_job_id(id); !s) return error_reply(400, "job id: " + s.message());
  return std::nullopt;
}

std::optional<HttpReply> check_admin(const ExtenderService& service, const HttpRequest& request) {
  const std::string& token = service.config().admin_token;
  if (token.empty()) {
    return error_reply(403, "alloxd has no admin_token configured; admin endpoints are off");
  }
  if (request.authorization_headers > 1) {
    return error_reply(400, "more than one Authorization header; send one");
  }
  // The scheme is case-insensitive (RFC 9110); the token is compared in time that does not
  // depend on where it differs.
  constexpr std::string_view kScheme = "bearer ";
  const std::string& given = request.authorization;
  bool bearer = given.size() >= kScheme.size();
  for (std::size_t i = 0; bearer && i < kScheme.size(); ++i) {
    bearer = std::tolower(static_cast<unsigned char>(given[i])) == kScheme[i];
  }
  const std::string_view presented =
      bearer ? std::string_view(given).substr(kScheme.size()) : std::string_view();
  unsigned char differ = presented.size() == token.size() ? 0 : 1;
  for (std::size_t i = 0; i < token.size(); ++i) {
    differ |= static_cast<unsigned char>(token[i] ^ (i < presented.size() ? presented[i] : 0));
  }
  if (!bearer || differ != 0) {
    return error_reply(401, "this endpoint needs 'Authorization: Bearer <admin token>'");
  }
  return std::nullopt;
}

// One sample of POST /v1/profiles:
//   {"job": "ns/name", "device": "gpu", "iterations": 20, "seconds": 13.5, "kind": "profile"}
Expected<ProfileReport> parse_profile(const json& value, const std::string& where) {
  if (!value.is_object()) return Error{where + ": expected an object"};
  ProfileReport report;
  auto text = [&](const char* key, std::string& out) -> Status {
    const json* v = find_key(value, key);
    if (v == nullptr || !v->is_string() || v->get<std::string>().empty()) {
      return Error{where + "." + key + ": expected a non-empty string"};
    }
    out = v->get<std::string>();
    return OkStatus();
  };
  if (auto s = text("job", report.job_id); !s) return s.error();
  if (auto s = check_job_id(report.job_id); !s) return Error{where + ".job: " + s.message()};
  if (auto s = text("device", report.device); !s) return s.error();
  if (!is_device_type_name(report.device)) {
    return Error{where +
                 ".device: must be a device type name (lowercase letters, digits, '-', '_', '.'; "
                 "at most 63 characters)"};
  }
  const json* iterations = find_key(value, "iterations");
  // Above int64 the parser gives an unsigned number, which would wrap negative.
  if (iterations == nullptr || !iterations->is_number_integer() ||
      (iterations->is_number_unsigned() &&
       iterations->get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()) ||
      iterations->get<std::int64_t>() <= 0) {
    return Error{where + ".iterations: expected a positive integer"};
  }
  report.iterations = iterations->get<std::int64_t>();
  const json* seconds = find_key(value, "seconds");
  if (seconds == nullptr || !seconds->is_number() || !(seconds->get<double>() > 0) ||
      !std::isfinite(seconds->get<double>())) {
    return Error{where + ".seconds: expected a positive number"};
  }
  if (!(seconds->get<double>() >= kMinJobSeconds && seconds->get<double>() <= kMaxJobSeconds)) {
    return Error{where + ".seconds: must be within 0.001 to 2592000 (30 days), got " +
                 seconds->dump()};
  }
  report.seconds = seconds->get<double>();
  if (const json* kind = find_key(value, "kind"); kind != nullptr && !kind->is_null()) {
    if (*kind == "profile") {
      report.kind = ProfileSample::Kind::kProfile;
    } else if (*kind == "progress") {
      report.kind = ProfileSample::Kind::kProgress;
    } else {
      return Error{where + ".kind: expected \"profile\" or \"progress\""};
    }
  }
  return report;
}

// A sample says how fast the job runs on a type one of its pods can run on (a GPU pod of any
// model: each model's type), or the type it runs on.
Status check_profile_device(const JobView& job, const DeviceMapping& devices,
                            const DeviceType& device) {
  std::vector<DeviceType> types;
  if (!job.record.device.empty()) types.push_back(job.record.device);
  for (const VariantView& variant : job.variants) {
    for (const DeviceType& type : devices.interchangeable(variant.device)) types.push_back(type);
  }
  if (std::find(types.begin(), types.end(), device) != types.end()) return OkStatus();
  std::sort(types.begin(), types.end());
  types.erase(std::unique(types.begin(), types.end()), types.end());
  std::string listed;
  for (const DeviceType& type : types) listed += (listed.empty() ? "" : ", ") + type;
  return Error{"job " + job.record.id + " has no pod of type " + device +
               (listed.empty() ? "" : " (its types: " + listed + ")")};
}

HttpReply post_profiles(ExtenderService& service, const std::string& body) {
  auto value = parse_json_body(body);
  if (!value) return error_reply(400, value.message());
  std::vector<ProfileReport> reports;
  json list = value->is_array() ? *value : json::array({*value});
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto report = parse_profile(list[i], "samples[" + std::to_string(i) + "]");
    if (!report) return error_reply(400, report.message());
    auto job = service.job(report->job_id);
    if (!job) return error_reply(404, "job " + report->job_id + " is unknown to allox");
    if (auto s = check_profile_device(*job, service.config().devices, report->device); !s) {
      return error_reply(400, "samples[" + std::to_string(i) + "].device: " + s.message());
    }
    reports.push_back(std::move(*report));
  }
  // Every sample was checked above: a batch is kept whole or refused whole.
  for (const ProfileReport& report : reports) {
    if (auto s = service.add_profile(report); !s) return error_reply(400, s.message());
  }
  return json_reply(200, {{"accepted", reports.size()}});
}

// The most candidate nodes one /filter or /prioritize may name: unbounded (the body limit
// bounds it) unless the request threads run real-time, ahead of every normal process.
std::size_t realtime_node_names(const ExtenderService& service) {
  if (request_class() != RequestClass::kRealtime) return static_cast<std::size_t>(-1);
  return service.config().limits.realtime_node_names;
}

HttpReply extender_verb(ExtenderService& service, const HttpRequest& request) {
  const std::string& path = request.path;
  if (path == "/filter" || path == "/prioritize") {
    auto args = parse_extender_args(request.body, PodFields::kRead);
    if (!args) return error_reply(400, args.message());
    if (const std::size_t most = realtime_node_names(service); args->candidates().size() > most) {
      return error_reply(413, std::to_string(args->candidates().size()) +
                                  " candidate nodes in one call; with real-time request threads "
                                  "alloxd answers at most " +
                                  std::to_string(most) + " (limits.realtime_node_names)");
    }
    if (path == "/filter") return {200, "application/json", render(service.filter(*args))};
    return {200, "application/json", render(service.prioritize(*args))};
  }
  if (path == "/bind") {
    auto args = parse_binding_args(request.body);
    if (!args) return error_reply(400, args.message());
    return {200, "application/json", render(service.bind(*args))};
  }
  auto args = parse_preemption_args(request.body);
  if (!args) return error_reply(400, args.message());
  return {200, "application/json", render(service.preempt(*args))};
}

// POST /v1/jobs/<id>/done, the admin checked: the job's completion, once.
HttpReply post_job_done(ExtenderService& service, const std::string& id) {
  if (auto bad = bad_job_id(id)) return *bad;
  if (!service.job(id)) return error_reply(404, "job " + id + " is unknown to allox");
  auto done = [&](bool already_recorded) {
    return json_reply(200,
                      {{"job", id}, {"phase", "done"}, {"already_recorded", already_recorded}});
  };
  if (auto s = service.complete(id); !s) {
    // A report of a completion already recorded (the pod's Succeeded phase read off the
    // watch came first, or a retry after a lost answer) is a repeat, not a conflict: a job
    // can report its own end without racing the watch. A job that never ran conflicts.
    if (auto now = service.job(id); now && now->record.phase == JobPhase::kDone) {
      return done(true);
    }
    return error_reply(409, s.message());
  }
  return done(false);
}

// /v1/jobs/<rest>: a job's completion (POST <id>/done), removal (DELETE) or view (GET); nullopt
// for any other request there.
std::optional<HttpReply> job_route(ExtenderService& service, const HttpRequest& request,
                                   const std::string& rest) {
  if (request.method == "POST" && rest.size() > kDoneSuffix.size() && rest.ends_with(kDoneSuffix)) {
    if (auto denied = check_admin(service, request)) return *denied;
    return post_job_done(service, rest.substr(0, rest.size() - kDoneSuffix.size()));
  }
  // An admin removes a queued job (one its pods can no longer rejoin).
  if (request.method == "DELETE") {
    if (auto denied = check_admin(service, request)) return *denied;
    if (auto bad = bad_job_id(rest)) return *bad;
    if (!service.job(rest)) return error_reply(404, "job " + rest + " is unknown to allox");
    if (auto s = service.remove(rest); !s) return error_reply(409, s.message());
    return json_reply(200, {{"job", rest}, {"phase", "removed"}});
  }
  if (request.method == "GET") {
    if (auto bad = bad_job_id(rest)) return *bad;
    auto job = service.job(rest);
    if (!job) return error_reply(404, job.message());
    return json_reply(200, to_json(*job));
  }
  return std::nullopt;
}

}  // namespace

std::size_t body_limit(const ExtenderService& service, const HttpRequest& head) {
  if ((head.path == "/filter" || head.path == "/prioritize") &&
      request_class() == RequestClass::kRealtime) {
    return service.config().limits.realtime_filter_body_bytes;
  }
  return static_cast<std::size_t>(-1);
}

Verb verb_of(const std::string& path) {
  if (path == "/filter") return Verb::kFilter;
  if (path == "/prioritize") return Verb::kPrioritize;
  if (path == "/bind") return Verb::kBind;
  if (path == "/preempt") return Verb::kPreempt;
  if (path.rfind("/v1/", 0) == 0) return Verb::kApi;
  return Verb::kStatus;
}

bool may_block(const HttpRequest& request) {
  const std::string& path = request.path;
  return !(path == "/filter" || path == "/prioritize" || path == "/preempt" || path == "/healthz" ||
           path == "/readyz");
}

HttpReply route(ExtenderService& service, const HttpRequest& request) {
  const std::string& path = request.path;
  const bool get = request.method == "GET";
  const bool post = request.method == "POST";
  Verb verb = verb_of(path);
  if (verb == Verb::kFilter || verb == Verb::kPrioritize || verb == Verb::kBind ||
      verb == Verb::kPreempt) {
    if (!post) return error_reply(405, path + " takes POST");
    return extender_verb(service, request);
  }
  if (path == kGateWebhookPath) {
    if (!post) return error_reply(405, path + " takes POST");
    auto answer = review_gate_admission(request.body, service.config().scheduler_name);
    if (!answer) return error_reply(400, answer.message());
    return {200, "application/json", *answer};
  }
  if (path == "/healthz" && get) return {200, "text/plain", "ok\n"};
  if (path == "/readyz" && get) {
    if (service.ready()) return {200, "text/plain", "ready\n"};
    return {503, "text/plain", "not ready: node inventory not loaded or not yet planned\n"};
  }
  if (path == "/metrics" && get) {
    return {200, "text/plain; version=0.0.4", service.metrics().render()};
  }
  if (path == "/" && get) {
    const auto fairness = service.fairness();  // an inconsistent book shows no shares
    return {200, "text/html; charset=utf-8",
            render_status_page(service.queue(), fairness ? *fairness : FairnessReport{},
                               service.timeline(6 * 3600))};
  }
  if (path == "/v1/fairness" && get) {
    auto page = parse_list_page(request.query);
    if (!page) return error_reply(400, page.message());
    auto report = service.fairness();
    if (!report) return error_reply(500, "fairness report: " + report.message());
    return json_reply(200, fairness_to_json(*report, *page));
  }
  if (path == "/v1/queue" && get) {
    auto page = parse_list_page(request.query);
    if (!page) return error_reply(400, page.message());
    return json_reply(200, to_json(service.queue(), *page));
  }
  if (path == "/v1/profiles" && post) {
    if (auto denied = check_admin(service, request)) return *denied;
    return post_profiles(service, request.body);
  }
  if (path.size() > kJobsPrefix.size() && path.rfind(kJobsPrefix, 0) == 0) {
    if (auto reply = job_route(service, request, path.substr(kJobsPrefix.size()))) return *reply;
  }
  for (const char* read_only :
       {"/healthz", "/readyz", "/metrics", "/", "/v1/fairness", "/v1/queue"}) {
    if (path == read_only) return error_reply(405, path + " takes GET");
  }
  if (path == "/v1/profiles") return error_reply(405, path + " takes POST");
  return error_reply(404, "no route for " + request.method + " " + path);
}

}  // namespace allox::extender
