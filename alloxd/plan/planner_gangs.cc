// Gangs (docs/design.md, "Gangs"): a job of N pods × k units of one device type that run
// together. The policy places a job on one node, so the planner places gangs itself, before the
// policy's round, on the slots the round then no longer sees idle:
//
//   - Order: queued gangs by arrival (then id), each placed only when all N members have
//     been seen and N placements of k idle units of one type exist now: for each of the
//     gang's types in its order, the nodes in inventory order, as many members on a node as
//     its idle units hold and the member may go to (JobVariant::may_go_to; first fit).
//   - What this guarantees: a gang's start is all N placements at once, never more units on a
//     node than are idle there; an admitted gang (its gates removed) keeps its placements in
//     every plan until it binds or its hold lapses, and is then rolled back (controller).
//   - A gang that does not fit now waits. The oldest such gang with all its members seen
//     (not one held on its admission) gets a reservation (gang_reservation.h): the placements
//     that free soonest, their idle units held from the policy's round and from younger gangs
//     (except jobs that end before its estimated start: backfill, after the round), so a
//     stream of smaller jobs cannot keep it waiting. Younger gangs and jobs may still pass it
//     on other units; gangs start ahead of the policy's round, so a gang that fits is never
//     passed.
//   - A gang none of whose types could ever hold it (N placements of k over the whole
//     inventory) is parked by the book (JobBook::gang_too_large) and holds nothing.
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "alloxd/plan/planner.h"
#include "core/log.h"

namespace allox::extender {
namespace {

// The idle slots of `device` on `node` in `state`, `first` (when one of them) ahead.
std::vector<std::size_t> idle_on(const std::vector<MachineSlot>& slots, const ClusterState& state,
                                 const std::string& node, const DeviceType& device, int first) {
  std::vector<std::size_t> out;
  for (std::size_t s = 0; s < slots.size() && s < state.idle.size(); ++s) {
    if (state.idle[s] && slots[s].node == node && slots[s].device == device) out.push_back(s);
  }
  auto at = std::find(out.begin(), out.end(), static_cast<std::size_t>(std::max(0, first)));
  if (first >= 0 && at != out.end()) std::rotate(out.begin(), at, at + 1);
  return out;
}

// Whether member i may go to a node (JobVariant::may_go_to).
using MemberMayGo = std::function<bool(std::size_t member, const std::string& node)>;

// First fit of `members` × `units` of `device`: each member on the next node in inventory order
// with `units` idle slots that it may go to; empty when fewer than all fit.
std::vector<GangPlacement> first_fit(const std::vector<MachineSlot>& slots,
                                     const ClusterState& state,
                                     const std::vector<std::string>& members,
                                     const DeviceType& device, int units, const MemberMayGo& may_go,
                                     std::vector<std::size_t>& taking) {
  std::vector<GangPlacement> out;
  std::size_t s = 0;
  while (s < slots.size() && out.size() < members.size()) {
    if (slots[s].device != device) {
      ++s;
      continue;
    }
    // One node's slots of a type are adjacent (JobBook::set_inventory).
    std::vector<std::size_t> idle;
    const std::string& node = slots[s].node;
    for (; s < slots.size() && slots[s].node == node && slots[s].device == device; ++s) {
      if (s < state.idle.size() && state.idle[s]) idle.push_back(s);
    }
    for (std::size_t i = 0; i + static_cast<std::size_t>(units) <= idle.size() &&
                            out.size() < members.size() && may_go(out.size(), node);
         i += static_cast<std::size_t>(units)) {
      out.push_back({members[out.size()], node, static_cast<int>(idle[i])});
      taking.insert(taking.end(), idle.begin() + static_cast<std::ptrdiff_t>(i),
                    idle.begin() + static_cast<std::ptrdiff_t>(i + units));
    }
  }
  if (out.size() < members.size()) {
    taking.clear();
    return {};
  }
  return out;
}

// An admitted gang's placements again, each member on `units` idle slots of its own node (its
// planned ones first): `taking` gets them all, or stays empty when a node has too few now.
void hold_members(const std::vector<MachineSlot>& slots, const ClusterState& state, int units,
                  PlannedStart& start, std::vector<std::size_t>& taking) {
  std::map<std::string, std::vector<std::size_t>> left;
  for (GangPlacement& m : start.members) {
    if (!left.count(m.node)) left[m.node] = idle_on(slots, state, m.node, start.device, m.slot);
    std::vector<std::size_t>& idle = left[m.node];
    if (static_cast<int>(idle.size()) < units) {
      taking.clear();
      return;
    }
    m.slot = static_cast<int>(idle.front());
    taking.insert(taking.end(), idle.begin(), idle.begin() + units);
    idle.erase(idle.begin(), idle.begin() + units);
  }
}

// Why a gang with all its members waits: its rollback's reason, else the room it needs.
std::string room_note(const BookJob& job, int units) {
  if (!job.gang_note.empty()) return job.gang_note;
  const std::string n = std::to_string(job.record.gang);
  return "gang of " + n + " × " + units_text(job.variants.begin()->second.device, units) +
         " waits for room: " + n + " nodes' worth of " + std::to_string(units) +
         " free units at once";
}

}  // namespace

Planner::GangPlan Planner::plan_gangs(PlanInput& input) const {
  GangPlan plan;
  ClusterState& state = input.state;
  const std::vector<MachineSlot>& slots = *input.slots;
  std::vector<const BookJob*> gangs;
  for (const auto& [id, job] : book_.jobs()) {
    if (job.is_gang() && job.record.phase == JobPhase::kQueued && job.parked.empty() &&
        !job.intent) {
      gangs.push_back(&job);
    }
  }
  std::sort(gangs.begin(), gangs.end(), [](const BookJob* a, const BookJob* b) {
    return std::tie(a->record.arrival, a->record.id) < std::tie(b->record.arrival, b->record.id);
  });
  const auto wall = steady_now();
  for (const BookJob* job : gangs) {
    const std::string& id = job->record.id;
    const int n = job->record.gang;
    if (static_cast<int>(job->variants.size()) < n) {
      plan.waiting.push_back({id, "gang of " + std::to_string(n) + " waits for its members: " +
                                      std::to_string(job->variants.size()) + " of " +
                                      std::to_string(n) + " pods seen" +
                                      (job->gang_note.empty() ? "" : "; " + job->gang_note)});
      continue;
    }
    std::vector<std::string> members;
    int units = 1;
    for (const auto& [key, variant] : job->variants) {
      if (static_cast<int>(members.size()) < n) members.push_back(key);
      units = std::max(units, variant.units);
    }
    const JobVariant& first = job->variants.begin()->second;
    PlannedStart start;
    start.units = units;
    std::vector<std::size_t> taking;
    auto admitted = admitted_.find(id);
    const bool held = admitted != admitted_.end() &&
                      std::chrono::duration<double>(wall - admitted->second.at).count() <=
                          options_.admission_hold;
    if (held) {
      // Released: its members are pinned to their nodes, so it keeps them (any idle units there).
      start = admitted->second.start;
      hold_members(slots, state, units, start, taking);
    } else {
      const MemberMayGo may_go = [&](std::size_t member, const std::string& node) {
        const kube::NodeFacts* facts = book_.node_facts(node);
        return facts == nullptr || job->variants.at(members[member]).may_go_to(*facts);
      };
      for (const DeviceType& type : first.device_types()) {
        start.device = type;
        start.members = first_fit(slots, state, members, type, units, may_go, taking);
        if (!start.members.empty()) break;
      }
    }
    auto seconds_on = [&](const DeviceType& type) {
      return job->planned->time.count(type) > 0 ? job->planned->time.at(type)
                                                : config_.default_job_seconds;
    };
    if (taking.empty()) {
      std::string note = room_note(*job, units);
      if (!held && !plan.reservation) {
        // Only nodes every member may go to: units held where the gang cannot start would
        // stay idle for nothing.
        plan.reservation = reserve_gang(
            slots, state, n, units, first.device_types(), [&](const std::string& node) {
              const kube::NodeFacts* facts = book_.node_facts(node);
              return facts == nullptr ||
                     std::all_of(job->variants.begin(), job->variants.end(),
                                 [&](const auto& m) { return m.second.may_go_to(*facts); });
            });
        if (plan.reservation) {
          plan.reservation->job_id = id;
          hold_reservation(*plan.reservation, seconds_on(plan.reservation->device), state);
          note += "; " + reservation_text(*plan.reservation);
        }
      }
      plan.waiting.push_back({id, std::move(note)});
      continue;
    }
    const double seconds = seconds_on(start.device);
    for (std::size_t s : taking) {
      state.idle[s] = false;
      state.machines[s].busy_until = state.now + seconds;
    }
    start.node = start.members.front().node;
    start.slot = start.members.front().slot;
    plan.starts.emplace_back(id, std::move(start));
  }
  return plan;
}

void Planner::add_gangs(const GangPlan& gangs, Plan& plan) {
  for (const auto& [id, start] : gangs.starts) {
    plan.starts[id] = start;
    plan.waiting.erase(id);
  }
  // A waiting gang is listed after the policy's queue with why it waits; only the reserved
  // one has an estimated start (when its reserved units free).
  const int length = static_cast<int>(plan.waiting.size() + gangs.waiting.size());
  for (auto& [id, wait] : plan.waiting) wait.queue_length = length;
  int position = static_cast<int>(plan.waiting.size());
  for (const auto& [id, note] : gangs.waiting) {
    std::optional<double> estimate;
    if (gangs.reservation && gangs.reservation->job_id == id) estimate = gangs.reservation->start;
    plan.waiting[id] = PlannedWait{++position, length, estimate, note};
  }
  index_starts(plan);
}

Expected<JobRecord> Planner::record_gang_start(
    const std::string& job_id, const std::map<std::string, std::string>& member_nodes,
    const DeviceType& device, Durability durability) {
  const BookChange change = book::StartGang{job_id, member_nodes, device, durability};
  Applied applied = std::move(apply_changes({&change, 1}).front());
  if (!applied.status) return applied.status.error();
  return std::move(*applied.gang);
}

std::optional<std::string> Planner::gang_member_bound(const JobVariant& member,
                                                      const std::string& node) {
  std::map<std::string, std::string> bound;
  DeviceType device;
  {
    std::unique_lock lock(book_mu_);
    const BookJob* job = book_.job(member.job_id);
    if (job == nullptr || !job->is_gang() || job->record.phase != JobPhase::kQueued) {
      return std::nullopt;
    }
    // A rolled-back member's binding (the watch may show it after the rollback) or a pod that
    // is no member any more counts for nobody: the gang starts on its current members alone.
    const std::string key = pod_key(member.pod);
    if ((!member.pod.uid.empty() && rolled_back_.count(member.pod.uid)) ||
        !job->variants.count(key)) {
      return std::nullopt;
    }
    auto& seen = gang_bound_[member.job_id];
    seen[key] = node;
    if (static_cast<int>(seen.size()) < job->record.gang) return std::nullopt;
    bound = seen;
    gang_bound_.erase(member.job_id);
    auto type = book_.device_on(node, member);
    device = type.value_or(member.device);
  }
  auto started = record_gang_start(member.job_id, bound, device, Durability::kWritten);
  if (!started) return started.message();
  return std::nullopt;
}

Status Planner::gang_member_ended(const JobVariant& member, bool failed, bool retry) {
  const BookChange change = book::EndMember{member.job_id, pod_key(member.pod), failed, retry};
  Applied ended = std::move(apply_changes({&change, 1}).front());
  if (!ended.status || !ended.gang_ended) return ended.status;
  if (ended.gang_again) return requeue(member.job_id, Durability::kWritten);
  return complete(member.job_id, Durability::kWritten);
}

void Planner::roll_back_gang(const std::string& job_id, const std::string& note) {
  const BookChange change = book::RollBackGang{job_id, note};
  (void)apply({&change, 1});
}

Status Planner::adopt_gang(const std::string& job_id,
                           const std::map<std::string, std::string>& member_nodes) {
  const BookChange change = book::AdoptGang{job_id, member_nodes};
  return apply({&change, 1}).front();
}

std::vector<Planner::Rollback> Planner::take_rollbacks() {
  std::lock_guard write(write_mu_);
  return std::exchange(rollbacks_, {});
}

std::vector<std::string> Planner::lapsed_gangs() const {
  std::vector<std::string> out;
  std::shared_lock lock(book_mu_);
  const auto wall = steady_now();
  for (const auto& [id, admission] : admitted_) {
    if (admission.start.members.empty() ||
        std::chrono::duration<double>(wall - admission.at).count() <= options_.admission_hold) {
      continue;
    }
    const BookJob* job = book_.job(id);
    if (job != nullptr && job->record.phase == JobPhase::kQueued) out.push_back(id);
  }
  return out;
}

}  // namespace allox::extender
