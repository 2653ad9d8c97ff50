// Typed views of the extender's state for people and tools: the fairness report
// (GET /v1/fairness), the queue (GET /v1/queue), one job (GET /v1/jobs/{id}), and their JSON.
//
// Shares follow DESIGN section 3: a running job counts the dominant share of one machine of its
// fastest device type (1 / machines of that type), scaled by p_fast / p_actual when it runs on a
// slower type. The windowed share is the time-average over the last `window` seconds of the
// machine share the user's jobs held on the device types they ran on (1 / machines of a type
// per running job), from the usage history.
// Jain's index is over current shares of users that have queued or running jobs (1 when all
// are equal, 1/n when one user holds everything).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "extender/estimates.h"
#include "extender/plan.h"
#include "extender/store.h"

namespace allox::extender {

struct UserReport {
  std::string user;
  double share = 0;
  double window_share = 0;
  int queued = 0, running = 0, done = 0;
  std::optional<double> mean_jct;  // seconds, over done jobs
};

struct FairnessReport {
  double now = 0;
  double window = 0;
  std::vector<UserReport> users;  // sorted by name
  double jain_index = 1;
};

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
// usage is the usage history since now - window (fairness_report's windowed shares).
FairnessReport fairness_report(const JobBook& book, const std::vector<UsageRecord>& usage,
                               double now, double window);
QueueView queue_view(const JobBook& book, const Plan& plan, double now);
JobView job_view(const JobBook& book, const BookJob& job, const Plan& plan, double now);

nlohmann::json to_json(const FairnessReport& report);
nlohmann::json to_json(const JobView& job);
nlohmann::json to_json(const QueueView& queue);

}  // namespace allox::extender
