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
#include <vector>

#include "extender/estimates.h"
#include "extender/plan.h"
#include "extender/store.h"
#include "fairness/report.h"

namespace allox::extender {

struct VariantView {
  std::string pod;  // namespace/name
  DeviceType device;
  TimeEstimate estimate;
};

struct JobView {
  JobRecord record;
  std::vector<VariantView> variants;
  std::optional<PlannedStart> planned_start;
  std::optional<PlannedWait> planned_wait;
  std::optional<double> remaining;  // running jobs
  std::string parked;               // why the policy cannot take it (queued jobs)
  std::string bind_in_doubt;        // node of a bind not yet reconciled after a restart
};

struct QueueView {
  double now = 0;
  double plan_solved_at = 0;
  double plan_solve_seconds = 0;
  std::string plan_error;
  std::vector<JobView> queued;   // by plan position
  std::vector<JobView> running;  // by start time
  int machines = 0, idle_machines = 0, nodes = 0;
};

// The views, built from the book (read under its lock) and the latest plan at time `now`.
// The fairness report errs only on an inconsistent book (a start before its arrival).
Expected<FairnessReport> fairness_report(const JobBook& book, double now, double window);
QueueView queue_view(const JobBook& book, const Plan& plan, double now);
JobView job_view(const JobBook& book, const BookJob& job, const Plan& plan, double now);

nlohmann::json to_json(const JobView& job);
nlohmann::json to_json(const QueueView& queue);

}  // namespace allox::extender
