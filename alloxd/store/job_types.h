// The values a job's run is recorded as, shared by the book (job_book.h), the store (store.h),
// the estimates and the reports: plain data, no behaviour. A run's states: job_state.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "alloxd/model/pod.h"
#include "alloxd/store/job_state.h"

namespace allox::extender {

struct JobRecord {
  std::int64_t row = 0;  // the store's key for this run of the job; 0 until recorded
  std::string id;
  std::string user;
  double arrival = 0;  // unix seconds
  JobPhase phase = JobPhase::kQueued;
  // Set once running: the bound pod, where, on which device, and the machine slot.
  std::string pod_namespace, pod_name, pod_uid;
  std::string node;
  DeviceType device;
  int machine = -1;  // index of the slot among the node's machines of `device`
  int units = 1;     // slots of `device` on `node` it holds (its pod's JobVariant::units)
  // Members of a gang (JobVariant::gang; 1: one pod). A running gang holds `units` slots of
  // `device` on each member's node (BookJob::member_nodes); `node` and the pod are its first
  // member's.
  int gang = 1;
  double start = 0;
  double finish = 0;  // once done or removed
};

struct ProfileSample {
  enum class Kind { kProfile, kProgress };
  std::string job_id;
  DeviceType device;
  Kind kind = Kind::kProfile;
  std::int64_t iterations = 0;  // iterations run (profile) or completed so far (progress)
  double seconds = 0;           // wall time they took
  double at = 0;                // unix seconds when reported
  std::int64_t job_row = 0;     // JobRecord::row of the run it belongs to
};

// A bind alloxd asked the API server for and has not yet seen answered.
struct BindIntent {
  std::int64_t job_row = 0;
  std::string job_id;
  PodIdentity pod;
  std::string node;
  DeviceType device;
  double at = 0;
};

struct UsageRecord {
  std::string job_id;
  std::string user;
  DeviceType device;
  std::string node;
  double start = 0;
  std::optional<double> end;
};

}  // namespace allox::extender
