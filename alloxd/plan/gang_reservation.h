// A waiting gang's reservation (docs/design.md, "Gangs"), what Slurm's and Volcano's backfill
// do for a large job: without one, a gang that does not fit now would wait as long as smaller
// jobs keep taking every unit that frees, which on a busy cluster can be forever.
//
// The rule, for one plan: the oldest queued gang that has all its members, fits nowhere now and
// is not parked (the inventory can hold it) gets the N placements of k units of one type that
// free soonest by the plan's estimates (an idle unit frees now, a busy one at its running job's
// estimated end). The units of those placements idle now are held from the policy's round until
// the gang's estimated end, so no other job starts there, except a job estimated to end before
// the gang's estimated start (backfill), which delays it by nothing if the estimates hold. The
// busy units of the placements are taken as they free, plan after plan, until the gang fits.
//
// The trade-off: held units stay idle until the last of the gang's units frees (at worst the
// longest remaining estimate among them), which is the cost AlloX's plan otherwise avoids; a
// job that overruns its estimate delays the gang, and backfilled jobs are chosen by arrival, not
// by the policy's fairness. Nothing is kept between plans: each plan reserves again from the
// book, so a gang that starts, is parked or leaves holds nothing in the next one.
//
// Pure functions over one plan's input; no locks, no state.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "alloxd/plan/plan.h"
#include "alloxd/store/job_book.h"
#include "fairness/policy.h"

namespace allox::extender {

struct GangReservation {
  std::string job_id;
  DeviceType device;
  int units = 1;                   // per member
  double start = 0;                // estimated: when the last of its placements frees
  std::vector<std::string> nodes;  // each placement's node (a node twice: two placements there)
  std::vector<std::size_t> held;   // its slots idle now, held from the policy's round
};

// The `members` placements of `units` slots of one of `types` that free soonest in `state`: on
// each node its slots by the time they free (idle ones at state.now, busy ones at busy_until,
// then inventory order), a placement of `units` freeing with the last of them; the earliest
// `members` placements over all nodes (ties: inventory order). The type whose last placement
// frees first wins (ties: `types`' order). nullopt when no type has `members` placements at all.
// job_id is left empty (the caller's).
// Only nodes `may_go` allows (every member's pod may go there) are reserved; unset: every node.
std::optional<GangReservation> reserve_gang(
    const std::vector<MachineSlot>& slots, const ClusterState& state, int members, int units,
    const std::vector<DeviceType>& types,
    const std::function<bool(const std::string& node)>& may_go = {});

// Marks the reservation's held slots taken in `state`, busy until the gang's estimated end
// (its start plus `seconds`), as a start would: the policy's round does not place jobs there.
void hold_reservation(const GangReservation& reservation, double seconds, ClusterState& state);

// Backfill: the queued jobs of `state` that `plan` does not start, in arrival order, each
// started on the reservation's held slots of one node (its device, `units` of them free of
// earlier backfills) when its estimated end there (state.now plus its time on the device) is no
// later than the reservation's start. Each one leaves plan.waiting (the other waits keep their
// order, renumbered). Returns the ids started.
std::vector<std::string> backfill(const GangReservation& reservation,
                                  const std::vector<MachineSlot>& slots, const ClusterState& state,
                                  Plan& plan);

// "reserved for gang lab/big: 2 × gpu ×4 on node-a, node-b", the words a waiting gang's note
// ends with.
std::string reservation_text(const GangReservation& reservation);

}  // namespace allox::extender
