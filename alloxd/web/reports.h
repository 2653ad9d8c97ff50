// Typed views of the extender's state for people and tools: the fairness report
// (GET /v1/fairness), the queue (GET /v1/queue), one job (GET /v1/jobs/{id}), and their JSON.
//
// The fairness report is fairness/report.h's (one definition for alloxd, `allox report` and the
// simulator): current share L with the job's estimates per device type, windowed dominant share
// over `window` seconds, weights, Jain's index of windowed shares; the machines per device type
// are the inventory's (the book's slots).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alloxd/model/estimates.h"
#include "alloxd/plan/plan.h"
#include "alloxd/store/job_types.h"
#include "fairness/report.h"

namespace allox::extender {

struct VariantView {
  std::string pod;  // namespace/name
  DeviceType device;
  TimeEstimate estimate;
  int units = 1;  // devices of `device` on one node the pod needs
};

struct JobView {
  JobRecord record;
  std::vector<VariantView> variants;
  std::optional<PlannedStart> planned_start;
  std::optional<PlannedWait> planned_wait;
  std::optional<double> remaining;  // running jobs
  std::string parked;  // why the policy cannot take it, or no node is large enough (queued jobs)
  std::string bind_in_doubt;  // node of a bind not yet reconciled after a restart
  // A gang (record.gang > 1): each member's node while it runs, and why it went back to the
  // queue (a rollback).
  std::map<std::string, std::string> member_nodes;
  std::string gang_note;
};

struct QueueView {
  double now = 0;
  double plan_solved_at = 0;
  double plan_solve_seconds = 0;
  std::string plan_error;
  std::vector<JobView> queued;   // by plan position
  std::vector<JobView> running;  // by start time
  int machines = 0, idle_machines = 0, nodes = 0;
  // Nodes that take no new job (cordoned, not ready), by name: why (NodeInventory::closed); the
  // first kShownClosedNodes by name, and how many there are.
  static constexpr std::size_t kShownClosedNodes = 100;
  std::map<std::string, std::string> closed_nodes;
  int closed_node_count = 0;
};

// A run as the fairness report reads it: its machine named "node/device-index", its units a
// gang's N × k; a run an older alloxd recorded before its arrival by a clock that stepped back
// reads as starting on arrival (and ending no earlier). Nullopt for a run an admin removed unrun
// (no share, no JCT). Shared by GET /v1/fairness and `allox report --store`.
std::optional<JobRun> report_run(const JobRecord& record);

// The views, built from the book (read under its lock) and the latest plan at time `now`.
// The fairness report errs only on an inconsistent book (a start before its arrival).
Expected<FairnessReport> fairness_report(const JobBook& book, double now, double window);
QueueView queue_view(const JobBook& book, const Plan& plan, double now);
JobView job_view(const JobBook& book, const BookJob& job, const Plan& plan, double now);

nlohmann::json to_json(const JobView& job);
nlohmann::json to_json(const QueueView& queue);

// Lists are paged as Kubernetes pages them: ?limit=N (1 to kMaxPageLimit, kDefaultPageLimit when
// absent) and ?continue=<the previous page's page.continue>. The token is the position of the
// page's first item in the list's order (plan order, start order, user name), so a list that
// changes between two requests may repeat or skip an item at the seam; the totals say how many
// there are.
inline constexpr std::size_t kDefaultPageLimit = 500;
inline constexpr std::size_t kMaxPageLimit = 5000;
struct ListPage {
  std::size_t limit = kDefaultPageLimit;
  std::size_t offset = 0;
};
// Reads limit and continue from a query string ("limit=100&continue=500"; other parameters are
// ignored). The error names the parameter.
Expected<ListPage> parse_list_page(std::string_view query);

// GET /v1/queue: the page of each list (queued and running, from the same position), with
//   "page": {"limit": L, "queued_total": Q, "running_total": R, "continue": "<token>"}
// where continue is "" on the last page.
nlohmann::json to_json(const QueueView& queue, const ListPage& page);
// GET /v1/fairness: the report (its totals over every user) with its users paged the same way:
//   "page": {"limit": L, "users_total": U, "continue": "<token>"}.
nlohmann::json fairness_to_json(const FairnessReport& report, const ListPage& page);

}  // namespace allox::extender
