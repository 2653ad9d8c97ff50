#include "alloxd/web/reports.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>

#include "fairness/share.h"
#include "fairness/usage_window.h"

namespace allox::extender {

using nlohmann::json;

std::optional<JobRun> report_run(const JobRecord& r) {
  if (r.phase == JobPhase::kRemoved) return std::nullopt;
  JobRun run;
  run.job = r.id;
  run.user = r.user;
  run.arrival = r.arrival;
  if (r.phase != JobPhase::kQueued) {
    run.start = std::max(r.start, r.arrival);
    run.device = r.device;
    run.machine = r.node + "/" + r.device + "-" + std::to_string(r.machine);
    run.units = r.units * std::max(1, r.gang);  // a gang holds N × k devices
  }
  if (r.phase == JobPhase::kDone) run.finish = std::max(r.finish, *run.start);
  return run;
}

Expected<FairnessReport> fairness_report(const JobBook& book, double now, double window) {
  ReportInput input;
  input.now = now;
  input.window = window;
  for (const MachineSlot& slot : book.slots()) ++input.machines[slot.device];
  for (const auto& [id, job] : book.jobs()) {
    const JobRecord& r = job.record;
    std::optional<JobRun> run = report_run(r);
    if (!run) continue;
    run->job = id;
    // A node that left the inventory still ran the job: count its machine, do not fail.
    if (r.phase != JobPhase::kQueued && !input.machines.contains(r.device)) {
      input.machines[r.device] = static_cast<std::size_t>(std::max(1, r.units));
    }
    for (const auto& [key, variant] : job.variants) {
      for (const DeviceType& type : variant.device_types()) {
        run->times[type] = book.estimate(job, type).seconds;
      }
    }
    input.jobs.push_back(std::move(*run));
  }
  return make_report(input);
}

JobView job_view(const JobBook& book, const BookJob& job, const Plan& plan, double now) {
  JobView view;
  view.record = job.record;
  view.parked = job.parked;
  if (job.intent) view.bind_in_doubt = job.intent->node;
  view.member_nodes = job.member_nodes;
  view.gang_note = job.gang_note;
  // A pod that runs on several types (a GPU of any model) is listed once per type.
  for (const auto& [key, variant] : job.variants) {
    for (const DeviceType& type : variant.device_types()) {
      view.variants.push_back({key, type, book.estimate(job, type), variant.units});
    }
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
  for (const auto& [name, node] : book.nodes()) {
    if (node.closed.empty()) continue;
    if (view.closed_nodes.size() < QueueView::kShownClosedNodes) view.closed_nodes[name] = node.closed;
    ++view.closed_node_count;
  }
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
                        {"units", v.units},
                        {"estimate_seconds", v.estimate.seconds},
                        {"estimate_source", source_name(v.estimate.source)},
                        {"profile_samples", v.estimate.samples}});
  }
  out["variants"] = variants;
  if (r.phase == JobPhase::kRunning || r.phase == JobPhase::kDone) {
    out["pod"] = r.pod_namespace + "/" + r.pod_name;
    out["node"] = r.node;
    out["device"] = r.device;
    out["units"] = r.units;
    out["start"] = r.start;
  }
  if (r.phase == JobPhase::kDone) {
    out["finish"] = r.finish;
    out["jct"] = r.finish - r.arrival;
  }
  if (r.phase == JobPhase::kRemoved) out["removed_at"] = r.finish;
  // FailedAndUnresolvableNodes: why the policy cannot take this job (alloxd/plan/planner.h).
  if (!job.parked.empty()) out["parked"] = job.parked;
  if (!job.bind_in_doubt.empty()) out["bind_in_doubt"] = job.bind_in_doubt;
  if (r.gang > 1) {
    // "gang of 4 × gpu ×2 on node-a, node-b" while it runs; its size and note always.
    json gang = {{"size", r.gang}};
    if (!job.member_nodes.empty()) {
      PlannedStart ran{r.node, r.device, -1, r.units, {}};
      for (const auto& [pod, node] : job.member_nodes) ran.members.push_back({pod, node, -1});
      gang["members"] = job.member_nodes;
      if (r.phase != JobPhase::kQueued) gang["text"] = start_text(ran);
    }
    if (!job.gang_note.empty()) gang["note"] = job.gang_note;
    out["gang"] = gang;
  }
  if (job.remaining) out["remaining_seconds"] = *job.remaining;
  if (job.planned_start) {
    out["plan"] = {{"starts_now", true},
                   {"node", job.planned_start->node},
                   {"device", job.planned_start->device},
                   {"units", job.planned_start->units},
                   {"text", start_text(*job.planned_start)}};
    if (!job.planned_start->members.empty()) {
      json members = json::object();
      for (const GangPlacement& m : job.planned_start->members) members[m.pod] = m.node;
      out["plan"]["members"] = members;
    }
  } else if (job.planned_wait) {
    out["plan"] = {{"starts_now", false},
                   {"position", job.planned_wait->position},
                   {"queue_length", job.planned_wait->queue_length},
                   {"estimated_start", job.planned_wait->estimated_start
                                           ? json(*job.planned_wait->estimated_start)
                                           : json(nullptr)}};
    if (!job.planned_wait->note.empty()) out["plan"]["note"] = job.planned_wait->note;
  }
  return out;
}

namespace {

// The queue's JSON with the jobs of queued[q_begin, q_end) and running[r_begin, r_end).
json queue_json(const QueueView& queue, std::pair<std::size_t, std::size_t> q,
                std::pair<std::size_t, std::size_t> r) {
  json queued = json::array(), running = json::array();
  for (std::size_t i = q.first; i < q.second; ++i) queued.push_back(to_json(queue.queued[i]));
  for (std::size_t i = r.first; i < r.second; ++i) running.push_back(to_json(queue.running[i]));
  return {{"now", queue.now},
          {"plan",
           {{"solved_at", queue.plan_solved_at},
            {"solve_seconds", queue.plan_solve_seconds},
            {"error", queue.plan_error}}},
          {"nodes", queue.nodes},
          {"machines", queue.machines},
          {"idle_machines", queue.idle_machines},
          {"closed_nodes", queue.closed_nodes},
          {"closed_node_count", queue.closed_node_count},
          {"queued", queued},
          {"running", running}};
}

}  // namespace

json to_json(const QueueView& queue) {
  return queue_json(queue, {0, queue.queued.size()}, {0, queue.running.size()});
}

namespace {

// The bounds of the page of a list of `total` items.
std::pair<std::size_t, std::size_t> page_bounds(const ListPage& page, std::size_t total) {
  const std::size_t begin = std::min(page.offset, total);
  return {begin, begin + std::min(page.limit, total - begin)};
}

// The next page's token, "" when every list ends within this page.
std::string next_token(const ListPage& page, std::size_t longest) {
  if (page.offset >= longest || longest - page.offset <= page.limit) return "";
  return std::to_string(page.offset + page.limit);
}

// A whole number in [min, max] written in plain digits.
std::optional<std::size_t> whole_number(std::string_view text, std::size_t min, std::size_t max) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  std::size_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::size_t>(c - '0');
  }
  if (value < min || value > max) return std::nullopt;
  return value;
}

}  // namespace

Expected<ListPage> parse_list_page(std::string_view query) {
  ListPage page;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    if (key == "limit") {
      auto limit = whole_number(value, 1, kMaxPageLimit);
      if (!limit) {
        return Error{"limit: expected a whole number from 1 to " + std::to_string(kMaxPageLimit)};
      }
      page.limit = *limit;
    } else if (key == "continue") {
      if (value.empty()) continue;  // the first page
      auto offset = whole_number(value, 0, std::numeric_limits<std::uint32_t>::max());
      if (!offset) return Error{"continue: expected the token of a previous page's page.continue"};
      page.offset = *offset;
    }
  }
  return page;
}

json to_json(const QueueView& queue, const ListPage& page) {
  json doc = queue_json(queue, page_bounds(page, queue.queued.size()),
                        page_bounds(page, queue.running.size()));
  doc["page"] = {
      {"limit", page.limit},
      {"queued_total", queue.queued.size()},
      {"running_total", queue.running.size()},
      {"continue", next_token(page, std::max(queue.queued.size(), queue.running.size()))}};
  return doc;
}

json fairness_to_json(const FairnessReport& report, const ListPage& page) {
  FairnessReport shown;  // the totals, and only this page's users
  shown.now = report.now;
  shown.window = report.window;
  shown.jain_windowed_share = report.jain_windowed_share;
  shown.queued = report.queued;
  shown.running = report.running;
  shown.done = report.done;
  shown.mean_jct = report.mean_jct;
  const auto [begin, end] = page_bounds(page, report.users.size());
  shown.users.assign(report.users.begin() + static_cast<std::ptrdiff_t>(begin),
                     report.users.begin() + static_cast<std::ptrdiff_t>(end));
  json doc = report_to_json(shown);
  doc["page"] = {{"limit", page.limit},
                 {"users_total", report.users.size()},
                 {"continue", next_token(page, report.users.size())}};
  return doc;
}

}  // namespace allox::extender
