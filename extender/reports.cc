#include "extender/reports.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "fairness/share.h"
#include "fairness/usage_window.h"

namespace allox::extender {

using nlohmann::json;

Expected<FairnessReport> fairness_report(const JobBook& book, double now, double window) {
  ReportInput input;
  input.now = now;
  input.window = window;
  for (const MachineSlot& slot : book.slots()) ++input.machines[slot.device];
  for (const auto& [id, job] : book.jobs()) {
    const JobRecord& r = job.record;
    if (r.phase == JobPhase::kRemoved) continue;  // removed unrun by an admin: no share, no JCT
    JobRun run;
    run.job = id;
    run.user = r.user;
    run.arrival = r.arrival;
    if (r.phase != JobPhase::kQueued) {
      run.start = r.start;
      run.device = r.device;
      run.machine = r.node + "/" + r.device + "-" + std::to_string(r.machine);
      // A node that left the inventory still ran the job: count its machine, do not fail.
      if (!input.machines.contains(r.device)) input.machines[r.device] = 1;
    }
    if (r.phase == JobPhase::kDone) run.finish = r.finish;
    for (const auto& [key, variant] : job.variants) {
      run.times[variant.device] = book.estimate(job, variant.device).seconds;
    }
    input.jobs.push_back(std::move(run));
  }
  return make_report(input);
}

JobView job_view(const JobBook& book, const BookJob& job, const Plan& plan, double now) {
  JobView view;
  view.record = job.record;
  view.parked = job.parked;
  if (job.intent) view.bind_in_doubt = job.intent->node;
  for (const auto& [key, variant] : job.variants) {
    view.variants.push_back({key, variant.device, book.estimate(job, variant.device)});
  }
  if (auto it = plan.starts.find(job.record.id);
      it != plan.starts.end() && job.record.phase == JobPhase::kQueued) {
    view.planned_start = it->second;
  }
  if (auto it = plan.waiting.find(job.record.id);
      it != plan.waiting.end() && job.record.phase == JobPhase::kQueued) {
    view.planned_wait = it->second;
  }
  if (job.record.phase == JobPhase::kRunning) view.remaining = book.remaining(job, now);
  return view;
}

QueueView queue_view(const JobBook& book, const Plan& plan, double now) {
  QueueView view;
  view.now = now;
  view.plan_solved_at = plan.solved_at;
  view.plan_solve_seconds = plan.solve_seconds;
  view.plan_error = plan.error;
  view.nodes = static_cast<int>(book.node_count());
  for (const MachineSlot& slot : book.slots()) {
    ++view.machines;
    if (slot.running_job.empty()) ++view.idle_machines;
  }
  for (const auto& [id, job] : book.jobs()) {
    if (job.record.phase == JobPhase::kQueued)
      view.queued.push_back(job_view(book, job, plan, now));
    if (job.record.phase == JobPhase::kRunning) {
      view.running.push_back(job_view(book, job, plan, now));
    }
  }
  auto rank = [](const JobView& j) {
    if (j.planned_start) return 0;
    if (j.planned_wait) return j.planned_wait->position;
    return std::numeric_limits<int>::max();
  };
  std::sort(view.queued.begin(), view.queued.end(), [&](const JobView& a, const JobView& b) {
    return std::forward_as_tuple(rank(a), a.record.arrival, a.record.id) <
           std::forward_as_tuple(rank(b), b.record.arrival, b.record.id);
  });
  std::sort(view.running.begin(), view.running.end(), [](const JobView& a, const JobView& b) {
    return std::tie(a.record.start, a.record.id) < std::tie(b.record.start, b.record.id);
  });
  return view;
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
  if (r.phase == JobPhase::kRunning || r.phase == JobPhase::kDone) {
    out["pod"] = r.pod_namespace + "/" + r.pod_name;
    out["node"] = r.node;
    out["device"] = r.device;
    out["start"] = r.start;
  }
  if (r.phase == JobPhase::kDone) {
    out["finish"] = r.finish;
    out["jct"] = r.finish - r.arrival;
  }
  if (r.phase == JobPhase::kRemoved) out["removed_at"] = r.finish;
  // FailedAndUnresolvableNodes: why the policy cannot take this job (extender/planner.h).
  if (!job.parked.empty()) out["parked"] = job.parked;
  if (!job.bind_in_doubt.empty()) out["bind_in_doubt"] = job.bind_in_doubt;
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
