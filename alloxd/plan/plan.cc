#include "alloxd/plan/plan.h"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace allox::extender {
namespace {

// Policies may leave estimated starts out (they are advisory), and a start that found no node
// its pods may go to has none either. For those jobs, list-schedule in the given order: each
// goes to the machine where it would finish first (ties: the lowest machine), starting when that
// machine frees up (busy machines at their estimated finish, machines taken by this round's
// starts after those jobs). A job takes the same time on every machine of a type, so its best
// machine is the earliest free of some type: one heap per type, O(jobs × types × log machines)
// rather than a scan of every machine per job (20,000 such jobs on 40,000 machines: seconds).
template <class Waiting>
void fill_missing_starts(const ClusterState& state, const std::vector<Placement>& starts,
                         std::vector<Waiting>& waiting) {
  // The policy usually estimates every start: then there is nothing to schedule (and no index
  // of a 50,000-job queue to build).
  if (std::none_of(waiting.begin(), waiting.end(), [](const Waiting& w) {
        return w.estimated_start == std::numeric_limits<double>::infinity();
      })) {
    return;
  }
  std::vector<double> free_at(state.machines.size(), state.now);
  for (std::size_t m = 0; m < state.machines.size(); ++m) {
    if (!state.idle[m]) free_at[m] = std::max(state.now, state.machines[m].busy_until);
  }
  std::map<std::string, const Job*> queued_jobs;
  for (const QueuedJob& q : state.queue) queued_jobs[q.job->id] = q.job;
  for (const Placement& p : starts) {
    auto job = queued_jobs.find(p.job_id);
    if (job == queued_jobs.end() || p.machine >= free_at.size()) continue;
    free_at[p.machine] =
        state.now + job->second->time_on(state.machines[p.machine].device).value_or(0);
  }
  using Free = std::pair<double, std::size_t>;  // (free at, machine): the earliest, lowest first
  using EarliestFree = std::priority_queue<Free, std::vector<Free>, std::greater<>>;
  std::vector<std::pair<DeviceType, EarliestFree>> by_type;
  for (std::size_t m = 0; m < free_at.size(); ++m) {
    const DeviceType& device = state.machines[m].device;
    auto type = std::find_if(by_type.begin(), by_type.end(),
                             [&](const auto& t) { return t.first == device; });
    if (type == by_type.end()) type = by_type.insert(by_type.end(), {device, EarliestFree()});
    type->second.push({free_at[m], m});
  }
  for (Waiting& w : waiting) {
    if (w.estimated_start != std::numeric_limits<double>::infinity()) continue;
    const Job& job = *w.queued->job;
    EarliestFree* best = nullptr;
    double best_finish = std::numeric_limits<double>::infinity();
    for (auto& [device, heap] : by_type) {
      auto p = job.time_on(device);
      if (!p) continue;
      const auto [at, m] = heap.top();
      const double finish = at + *p;
      if (finish < best_finish ||
          (finish == best_finish && best != nullptr && m < best->top().second)) {
        best = &heap;
        best_finish = finish;
      }
    }
    if (best == nullptr) continue;
    const std::size_t m = best->top().second;
    w.estimated_start = best->top().first;
    best->pop();
    best->push({best_finish, m});
  }
}

// Plan::starts_on's key: the node and the device, apart.
std::string machine_key(std::string_view node, std::string_view device) {
  std::string key;
  key.reserve(node.size() + 1 + device.size());
  key.append(node).push_back('\0');
  key.append(device);
  return key;
}

// The slots a start of `units` takes on `machine`'s node and device (plan.h): `machine` first
// when it is free, then the node's lowest free slots; empty when fewer than `units` are free.
// A node's slots of one device are adjacent (JobBook::set_inventory).
std::vector<std::size_t> take_units(const std::vector<MachineSlot>& slots, std::size_t machine,
                                    int units, std::vector<bool>& taken) {
  auto same = [&](std::size_t i) {
    return slots[i].node == slots[machine].node && slots[i].device == slots[machine].device;
  };
  std::vector<std::size_t> out;
  if (!taken[machine]) out.push_back(machine);
  std::size_t first = machine;
  while (first > 0 && same(first - 1)) --first;
  for (std::size_t i = first; i < slots.size() && same(i); ++i) {
    if (static_cast<int>(out.size()) >= units) break;
    if (i != machine && !taken[i]) out.push_back(i);
  }
  if (static_cast<int>(out.size()) < units) return {};
  for (std::size_t i : out) taken[i] = true;
  return out;
}

// Which nodes a queued job's pods may go to (JobVariant::may_go_to), by its index in the queue.
class NodeChoice {
 public:
  explicit NodeChoice(const PlanInput& input) : input_(input) {}

  // Why node may not take job q on `device` (kube-scheduler's words for the first variant that
  // runs there); std::nullopt when some variant of it may go there, or the node's facts are not
  // known (the config's inventory).
  std::optional<std::string> refusal(std::size_t q, std::string_view node,
                                     const DeviceType& device) const {
    if (input_.nodes == nullptr) return std::nullopt;
    auto facts = input_.nodes->find(node);
    if (facts == input_.nodes->end()) return std::nullopt;
    const auto* placements =
        q < input_.queue_placements.size() ? input_.queue_placements[q].get() : nullptr;
    if (placements == nullptr) {
      static const JobVariant kStatesNothing;
      return kStatesNothing.refusal(facts->second);
    }
    std::optional<std::string> first;
    for (const JobVariant& variant : *placements) {
      if (!variant.runs_on(device)) continue;
      std::optional<std::string> why = variant.refusal(facts->second);
      if (!why) return std::nullopt;
      if (!first) first = std::move(why);
    }
    return first.value_or("no pod of it runs on " + device);
  }

 private:
  const PlanInput& input_;
};

// Another node's `units` idle slots of `device` for job q, on a node its pods may go to: the
// first such at or after slot `from` (a node's first slot of the type); empty when there is none.
// `from` moves to the node it took from (the next job of the same kind may find room there
// too), or past the last slot: nodes before it hold no room for a job of that kind, and no later
// start of this plan frees any.
std::vector<std::size_t> take_elsewhere(const std::vector<MachineSlot>& slots,
                                        const NodeChoice& choice, std::size_t q,
                                        const DeviceType& device, int units,
                                        std::vector<bool>& taken, std::size_t& from) {
  std::size_t s = from;
  while (s < slots.size()) {
    std::size_t next = s + 1;  // past this node's slots of the type (adjacent)
    while (next < slots.size() && slots[next].node == slots[s].node &&
           slots[next].device == slots[s].device) {
      ++next;
    }
    const bool idle =
        std::any_of(taken.begin() + static_cast<std::ptrdiff_t>(s),
                    taken.begin() + static_cast<std::ptrdiff_t>(next), [](bool t) { return !t; });
    if (slots[s].device == device && idle && !choice.refusal(q, slots[s].node, device)) {
      std::vector<std::size_t> taking = take_units(slots, s, units, taken);
      if (!taking.empty()) {
        from = s;
        return taking;
      }
    }
    s = next;
  }
  from = slots.size();
  return {};
}

// Jobs whose starts move alike: the same device and units, and pods stating the same
// constraints on it (PodConstraints::key), so nodes one of them found no room on have none for
// the others.
std::string kind_of(const PlanInput& input, std::size_t q, const DeviceType& device, int units) {
  std::string kind = device + '\0' + std::to_string(units);
  const auto* placements =
      q < input.queue_placements.size() ? input.queue_placements[q].get() : nullptr;
  if (placements == nullptr) return kind;
  for (const JobVariant& variant : *placements) {
    if (variant.runs_on(device)) kind += '\0' + variant.placement_key;
  }
  return kind;
}

struct Placed {
  std::vector<bool> taken;           // by slot: busy, or taken by a start of this plan
  std::vector<std::size_t> vacated;  // policy machines left idle by a start that found no node
};

// The Decision's starts as PlannedStarts, each on as many slots as its job needs, on a node its
// pods may go to: the policy's machine when they may, else (after every start that keeps its
// machine) the first node of the same type with room that they may go to. The policy plans by
// device type, so any idle machine of the type is as good to it; a start with no such node
// waits, with the reason in `notes`.
Placed place_starts(const PlanInput& input, const std::vector<Placement>& starts,
                    const std::vector<MachineSlot>& slots, Plan& plan,
                    std::unordered_map<std::string, std::string>& notes) {
  Placed placed;
  if (starts.empty()) return placed;
  const ClusterState& state = input.state;
  std::unordered_map<std::string_view, std::size_t> queued;
  queued.reserve(state.queue.size());
  for (std::size_t q = 0; q < state.queue.size(); ++q) queued.emplace(state.queue[q].job->id, q);
  std::vector<bool>& taken = placed.taken;
  taken.assign(slots.size(), false);
  for (std::size_t m = 0; m < slots.size() && m < state.idle.size(); ++m) taken[m] = !state.idle[m];
  const NodeChoice choice(input);
  struct Moved {
    const Placement* placement;
    std::size_t q;
    int units;
    std::string why;
  };
  std::vector<Moved> moved;
  for (const Placement& placement : starts) {
    if (placement.machine >= slots.size()) continue;  // a policy bug; the job stays queued
    auto job = queued.find(placement.job_id);
    const std::size_t q = job == queued.end() ? state.queue.size() : job->second;
    const int units = q == state.queue.size() ? 1 : std::max(1, state.queue[q].job->units);
    const MachineSlot& slot = slots[placement.machine];
    if (auto why = choice.refusal(q, slot.node, slot.device)) {
      moved.push_back({&placement, q, units, "planned node " + slot.node + ": " + *why});
      continue;
    }
    std::vector<std::size_t> taking = take_units(slots, placement.machine, units, taken);
    if (taking.empty()) continue;  // the node cannot hold it now: it waits
    plan.starts[placement.job_id] = {slot.node, slot.device, static_cast<int>(taking.front()),
                                     units};
  }
  // Each kind's scan resumes where its last one ended: a plan's moves cost one pass over the
  // slots per kind, not one per start (thousands of CPU starts planned onto GPU nodes whose
  // taint the CPU pods do not tolerate, each finding no room).
  std::unordered_map<std::string, std::size_t> scanned_to;
  for (const Moved& m : moved) {
    const DeviceType& device = slots[m.placement->machine].device;
    std::size_t& from = scanned_to[kind_of(input, m.q, device, m.units)];
    std::vector<std::size_t> taking =
        take_elsewhere(slots, choice, m.q, device, m.units, taken, from);
    if (taking.empty()) {
      notes[m.placement->job_id] =
          "no idle " + units_text(device, m.units) + " on a node its pod may go to (" + m.why + ")";
      continue;
    }
    const MachineSlot& slot = slots[taking.front()];
    plan.starts[m.placement->job_id] = {slot.node, slot.device, static_cast<int>(taking.front()),
                                        m.units};
  }
  for (const Moved& m : moved) {
    if (!taken[m.placement->machine]) placed.vacated.push_back(m.placement->machine);
  }
  return placed;
}

// A queued job as the plan lists the waiting: by estimated start, then arrival.
struct Waiting {
  double estimated_start;
  double arrival;
  const QueuedJob* queued;
};

// How many checks of a job's pods against a node one plan's refill may make in all: each kind
// of job (refill_kind) passes over the vacated nodes once, so this binds only when thousands of
// waiting jobs state constraints of their own, none of which a vacated node takes.
constexpr std::size_t kRefillChecks = 100000;

// Jobs that may take the same vacated nodes: of the same kind (kind_of) on each device type
// they run on.
std::string refill_kind(const PlanInput& input, std::size_t q, const Job& job) {
  std::string kind;
  for (const auto& entry : job.time) {
    kind += kind_of(input, q, entry.first, std::max(1, job.units)) + '\1';
  }
  return kind;
}

// The policy meant each vacated machine to run a job now, but the job it chose may not go to
// that node and found no other. Rather than leave them idle until the next plan makes the same
// choice, the waiting jobs take them in the plan's order (the policy's estimated start), each
// the first vacated node it can run on, whose pods may go there and that has its units idle.
// A kind of job resumes where its last scan ended: the nodes it passed over take no job of that
// kind now, and taking units only makes room scarcer. The jobs started leave `waiting`.
void refill_vacated(const PlanInput& input, const std::vector<MachineSlot>& slots,
                    std::vector<std::size_t> vacated, std::vector<bool>& taken,
                    std::vector<Waiting>& waiting, Plan& plan) {
  if (vacated.empty()) return;
  const ClusterState& state = input.state;
  const NodeChoice choice(input);
  // One entry per vacated node and device (the first of its vacated slots), in slot order.
  std::sort(vacated.begin(), vacated.end());
  std::vector<std::size_t> nodes;
  for (std::size_t machine : vacated) {
    if (nodes.empty() || slots[nodes.back()].node != slots[machine].node ||
        slots[nodes.back()].device != slots[machine].device) {
      nodes.push_back(machine);
    }
  }
  std::vector<bool> is_vacated(slots.size(), false);
  std::size_t idle_left = 0;  // vacated machines no job has taken yet
  for (std::size_t machine : vacated) {
    if (!is_vacated[machine] && !taken[machine]) ++idle_left;
    is_vacated[machine] = true;
  }
  std::unordered_map<std::string, std::size_t> scanned_to;
  std::vector<bool> started(waiting.size(), false);
  std::size_t checks = 0;
  for (std::size_t w = 0; w < waiting.size() && checks < kRefillChecks; ++w) {
    const Job& job = *waiting[w].queued->job;
    const auto q = static_cast<std::size_t>(waiting[w].queued - state.queue.data());
    std::size_t& from = scanned_to[refill_kind(input, q, job)];
    const int units = std::max(1, job.units);
    for (; from < nodes.size() && checks < kRefillChecks; ++from) {
      const MachineSlot& slot = slots[nodes[from]];
      if (!job.time_on(slot.device)) continue;
      ++checks;
      if (choice.refusal(q, slot.node, slot.device)) continue;
      std::vector<std::size_t> taking = take_units(slots, nodes[from], units, taken);
      if (taking.empty()) continue;
      plan.starts[job.id] = {slot.node, slot.device, static_cast<int>(taking.front()), units};
      started[w] = true;
      for (std::size_t m : taking) idle_left -= is_vacated[m] ? 1 : 0;
      break;
    }
    if (idle_left == 0) break;
  }
  std::size_t kept = 0;
  for (std::size_t w = 0; w < waiting.size(); ++w) {
    if (!started[w]) waiting[kept++] = waiting[w];
  }
  waiting.resize(kept);
}

}  // namespace

bool plan_needed(PlanCause cause, std::uint64_t latest_version, std::uint64_t book_version,
                 std::size_t queued) {
  if (cause == PlanCause::kAsked || latest_version != book_version) return true;
  return cause == PlanCause::kTick && queued > 0;
}

std::string units_text(const DeviceType& device, int units) {
  return units > 1 ? device + " ×" + std::to_string(units) : device;
}

std::string start_text(const PlannedStart& start) {
  if (start.members.empty()) return start.node + " (" + units_text(start.device, start.units) + ")";
  std::string text = "gang of " + std::to_string(start.members.size()) + " × " +
                     units_text(start.device, start.units) + " on ";
  std::vector<std::string_view> nodes;
  for (const GangPlacement& m : start.members) {
    if (std::find(nodes.begin(), nodes.end(), m.node) != nodes.end()) continue;
    text += (nodes.empty() ? "" : ", ") + m.node;
    nodes.push_back(m.node);
  }
  return text;
}

int Plan::planned_on(std::string_view node, std::string_view device) const {
  if (starts_on.empty()) return 0;
  auto found = starts_on.find(machine_key(node, device));
  return found == starts_on.end() ? 0 : found->second;
}

void index_starts(Plan& plan) {
  plan.starts_on.clear();
  for (const auto& [job, start] : plan.starts) {
    if (start.members.empty()) {
      plan.starts_on[machine_key(start.node, start.device)] += start.units;
    }
    for (const GangPlacement& m : start.members) {
      plan.starts_on[machine_key(m.node, start.device)] += start.units;
    }
  }
}

Plan make_plan(const PlanInput& input, const Expected<Decision>& decision,
               const std::vector<MachineSlot>& slots, double solve_seconds) {
  Plan plan;
  plan.version = input.version;
  plan.solved_at = input.state.now;
  plan.solve_seconds = solve_seconds;
  plan.unrunnable.insert(input.unrunnable.begin(), input.unrunnable.end());
  if (!decision) {
    plan.error = decision.message();
    return plan;
  }
  std::unordered_map<std::string, std::string> notes;
  Placed placed = place_starts(input, decision->start, slots, plan, notes);
  std::vector<Waiting> waiting;
  waiting.reserve(input.state.queue.size());
  for (const QueuedJob& queued : input.state.queue) {
    if (plan.starts.count(queued.job->id)) continue;
    auto estimate = decision->estimated_start.find(queued.job->id);
    double start = estimate == decision->estimated_start.end()
                       ? std::numeric_limits<double>::infinity()
                       : estimate->second;
    waiting.push_back({start, queued.job->arrival, &queued});
  }
  auto by_start = [](const Waiting& a, const Waiting& b) {
    return std::tie(a.estimated_start, a.arrival, a.queued->job->id) <
           std::tie(b.estimated_start, b.arrival, b.queued->job->id);
  };
  std::sort(waiting.begin(), waiting.end(), by_start);
  fill_missing_starts(input.state, decision->start, waiting);
  std::sort(waiting.begin(), waiting.end(), by_start);
  refill_vacated(input, slots, placed.vacated, placed.taken, waiting, plan);
  plan.waiting.reserve(waiting.size());
  for (std::size_t i = 0; i < waiting.size(); ++i) {
    PlannedWait wait{static_cast<int>(i + 1), static_cast<int>(waiting.size()), std::nullopt};
    if (waiting[i].estimated_start != std::numeric_limits<double>::infinity()) {
      wait.estimated_start = waiting[i].estimated_start;
    }
    if (auto note = notes.find(waiting[i].queued->job->id); note != notes.end()) {
      wait.note = std::move(note->second);
    }
    plan.waiting[waiting[i].queued->job->id] = wait;
  }
  index_starts(plan);
  return plan;
}

void PlanBoard::publish(std::shared_ptr<const Plan> plan) {
  std::shared_ptr<const Plan> previous;
  {
    std::lock_guard lock(mu_);
    previous = std::exchange(latest_, std::move(plan));
  }
  published_.notify_all();
  // A retired plan held by the board alone stays so: no reader can reach it any more.
  std::erase_if(retired_, [](const auto& retired) { return retired.use_count() == 1; });
  if (previous.use_count() > 1) retired_.push_back(std::move(previous));
  // else `previous` is freed here, on this thread, outside the lock
}

std::shared_ptr<const Plan> PlanBoard::latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

std::shared_ptr<const Plan> PlanBoard::wait_for(
    std::uint64_t version, std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mu_);
  published_.wait_until(lock, deadline, [&] { return latest_->version >= version; });
  return latest_;
}

}  // namespace allox::extender
