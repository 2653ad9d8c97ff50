// The latest scheduling plan, read by every filter and prioritize call.
//
// A plan is the policy's Decision turned into per-job answers: the node and slots each job that
// starts now goes to (a job of k units: k idle slots of one node and device, the policy's
// placement machine first when it is idle, then that node's lowest idle ones; a placement whose
// node has fewer idle slots left is dropped and the job waits; a placement on a node the job's
// pods may not go to, JobVariant::may_go_to, moves to the first node with k idle slots of the
// device that they may go to, after the placements that stay, or waits with the reason in
// PlannedWait::note; the machines such jobs leave idle go to the waiting jobs by estimated
// start, each to the first of them its pods may go to and that fits it), and for the others
// their position in the queue and estimated start (the policy's,
// else a list schedule: O(jobs × device types × log machines) per plan). Plans are immutable
// once made and shared by pointer (PlanBoard), so readers never wait for a solve.
//
// make_plan is pure. PlanBoard is thread-safe: publish() from one thread (the planner's),
// latest() and wait_for() from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "alloxd/store/job_book.h"

namespace allox::extender {

// One member of a gang's start: its pod and the node whose `units` slots it takes.
struct GangPlacement {
  std::string pod;  // namespace/name
  std::string node;
  int slot = -1;  // index into JobBook::slots(): the first of its units there

  bool operator==(const GangPlacement&) const = default;
};

struct PlannedStart {
  std::string node;
  DeviceType device;
  int slot = -1;  // index into JobBook::slots(): the first of its units
  int units = 1;  // slots of `device` on `node` it takes (Job::units); per member for a gang
  // A gang's start (planner_gangs.cc): every member on its own node, by pod; node and slot are
  // the first member's. Empty for a job of one pod.
  std::vector<GangPlacement> members = {};

  // The member's placement, or null when `pod` ("namespace/name") is none of them.
  const GangPlacement* member(std::string_view pod) const {
    for (const GangPlacement& m : members) {
      if (m.pod == pod) return &m;
    }
    return nullptr;
  }
  bool operator==(const PlannedStart&) const = default;
};

// How reports name what a start takes: "gpu" for one unit, "gpu ×2" for two ("starts on node-a
// (gpu ×2)").
std::string units_text(const DeviceType& device, int units);
// How reports name where a start goes: "node-a (gpu ×2)", or for a gang "gang of 4 × gpu ×2 on
// node-a, node-b" (each node once, in the members' order).
std::string start_text(const PlannedStart& start);

struct PlannedWait {
  int position = 0;  // 1-based, by estimated start (then arrival)
  int queue_length = 0;
  // Unix seconds: the policy's estimate, or, where it gave none, a list schedule of the waiting
  // jobs in the policy's order onto the machines as they free up (see make_plan). Unset only
  // for a job no machine can run.
  std::optional<double> estimated_start;
  // Why it waits when the position does not say it (a gang: its members, or the room it needs).
  std::string note = {};
};

struct Plan {
  std::uint64_t version = 0;  // JobBook::version() of the input
  double solved_at = 0;
  double solve_seconds = 0;
  std::unordered_map<std::string, PlannedStart> starts;
  std::unordered_map<std::string, PlannedWait> waiting;
  // How many units the plan's starts take on each machine type of a node (index_starts()): the
  // free machines there that a start planned elsewhere may take without taking another job's.
  std::unordered_map<std::string, int> starts_on;
  int planned_on(std::string_view node, std::string_view device) const;
  std::unordered_set<std::string> unrunnable;
  std::string error;  // the policy's error, when it failed
  // Queued jobs the policy cannot take (job id -> reason); left out of the round so it goes on
  // for everyone else. Event writers post these as FailedAndUnresolvableNodes reasons.
  std::unordered_map<std::string, std::string> parked;
};

// Indexed (index_starts) before it returns.
Plan make_plan(const PlanInput& input, const Expected<Decision>& decision,
               const std::vector<MachineSlot>& slots, double solve_seconds);
// Recounts plan.starts_on from plan.starts (after starts were added to a made plan).
void index_starts(Plan& plan);

// What made the planner thread plan: a change woke it, the tick came round with no change, or a
// caller asked (solve_now, and the thread's first plan).
enum class PlanCause { kChange, kTick, kAsked };

// Whether a plan must be solved, or would only repeat `latest` (made from book version
// `latest_version`; the book is at `book_version` with `queued` jobs queued, parked or not).
// A plan reads the book and the clock and nothing else, and the book's version moves with
// every change a plan reads (admissions included). So at an unchanged version:
//   - a change's wake changed nothing a plan reads (a settled intent that was not there, an
//     inventory as it was): the plan could differ only by the time it is solved at, which the
//     tick refreshes;
//   - the tick with nothing queued would plan no start and no wait: the same plan again.
// Everything else is solved: a new version, a caller's request, the tick with jobs queued
// (their estimated starts and admission holds move with the clock).
bool plan_needed(PlanCause cause, std::uint64_t latest_version, std::uint64_t book_version,
                 std::size_t queued);

// A plan replaced by a newer one is destroyed on the publishing thread, never under the board's
// lock nor by the reader that happened to hold it last: at 10,000 queued jobs freeing one is
// tens of thousands of frees, which readers (a /filter) would otherwise wait on or pay for.
// The board keeps each replaced plan until a later publish() finds no reader holding it.
class PlanBoard {
 public:
  PlanBoard() : latest_(std::make_shared<const Plan>()) {}
  void publish(std::shared_ptr<const Plan> plan);
  // Replaced plans some reader still held at the last publish() (kept for the publisher to free).
  std::size_t retired() const { return retired_.size(); }
  std::shared_ptr<const Plan> latest() const;
  // The latest plan once it reflects book version `version`, or whatever is latest at the
  // deadline.
  std::shared_ptr<const Plan> wait_for(std::uint64_t version,
                                       std::chrono::steady_clock::time_point deadline) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable published_;
  std::shared_ptr<const Plan> latest_;
  std::vector<std::shared_ptr<const Plan>> retired_;  // the publisher's alone
};

}  // namespace allox::extender
