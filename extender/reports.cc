#include "extender/reports.h"

namespace allox::extender {

using nlohmann::json;

json to_json(const FairnessReport& report) {
  json users = json::array();
  for (const UserReport& u : report.users) {
    users.push_back({{"user", u.user},
                     {"share", u.share},
                     {"window_share", u.window_share},
                     {"queued", u.queued},
                     {"running", u.running},
                     {"done", u.done},
                     {"mean_jct", u.mean_jct ? json(*u.mean_jct) : json(nullptr)}});
  }
  return {{"now", report.now},
          {"window_seconds", report.window},
          {"jain_index", report.jain_index},
          {"users", users}};
}

json to_json(const JobView& job) {
  const JobRecord& r = job.record;
  json out = {
      {"id", r.id}, {"user", r.user}, {"phase", phase_name(r.phase)}, {"arrival", r.arrival}};
  json variants = json::array();
  for (const VariantView& v : job.variants) {
    variants.push_back({{"pod", v.pod},
                        {"device", v.device},
                        {"estimate_seconds", v.estimate.seconds},
                        {"estimate_source", source_name(v.estimate.source)},
                        {"profile_samples", v.estimate.samples}});
  }
  out["variants"] = variants;
  if (r.phase != JobPhase::kQueued) {
    out["pod"] = r.pod_namespace + "/" + r.pod_name;
    out["node"] = r.node;
    out["device"] = r.device;
    out["start"] = r.start;
  }
  if (r.phase == JobPhase::kDone) {
    out["finish"] = r.finish;
    out["jct"] = r.finish - r.arrival;
  }
  if (job.remaining) out["remaining_seconds"] = *job.remaining;
  if (job.planned_start) {
    out["plan"] = {{"starts_now", true},
                   {"node", job.planned_start->node},
                   {"device", job.planned_start->device}};
  } else if (job.planned_wait) {
    out["plan"] = {{"starts_now", false},
                   {"position", job.planned_wait->position},
                   {"queue_length", job.planned_wait->queue_length},
                   {"estimated_start", job.planned_wait->estimated_start
                                           ? json(*job.planned_wait->estimated_start)
                                           : json(nullptr)}};
  }
  return out;
}

json to_json(const QueueView& queue) {
  json queued = json::array(), running = json::array();
  for (const JobView& j : queue.queued) queued.push_back(to_json(j));
  for (const JobView& j : queue.running) running.push_back(to_json(j));
  return {{"now", queue.now},
          {"plan",
           {{"solved_at", queue.plan_solved_at},
            {"solve_seconds", queue.plan_solve_seconds},
            {"error", queue.plan_error}}},
          {"nodes", queue.nodes},
          {"machines", queue.machines},
          {"idle_machines", queue.idle_machines},
          {"queued", queued},
          {"running", running}};
}

}  // namespace allox::extender
