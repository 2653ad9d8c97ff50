// alloxd's durable state in an embedded SQLite database: job lifecycle, the pods that are device
// variants of each job, profiling and progress samples, and usage history.
//
// The database runs in WAL mode with synchronous=FULL: a write method returns only after its
// transaction is on disk, so once alloxd acknowledges a request that wrote (a bind, a profile, a
// completion, a newly seen pod) a kill -9 or power cut cannot lose it. Writes are single
// statements or one transaction each. load() reads everything back to rebuild the queue.
//
// Thread-safe: one connection guarded by a mutex.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "extender/pod.h"

struct sqlite3;

namespace allox::extender {

enum class JobPhase { kQueued, kRunning, kDone };
const char* phase_name(JobPhase phase);

struct JobRecord {
  std::string id;
  std::string user;
  double arrival = 0;  // unix seconds
  JobPhase phase = JobPhase::kQueued;
  // Set once running: the bound pod, where, on which device, and the machine slot.
  std::string pod_namespace, pod_name, pod_uid;
  std::string node;
  DeviceType device;
  int machine = -1;  // index of the slot among the node's machines of `device`
  double start = 0;
  double finish = 0;  // once done
};

struct ProfileSample {
  enum class Kind { kProfile, kProgress };
  std::string job_id;
  DeviceType device;
  Kind kind = Kind::kProfile;
  std::int64_t iterations = 0;  // iterations run (profile) or completed so far (progress)
  double seconds = 0;           // wall time they took
  double at = 0;                // unix seconds when reported
};

struct UsageRecord {
  std::string job_id;
  std::string user;
  DeviceType device;
  std::string node;
  double start = 0;
  std::optional<double> end;
};

struct StoredState {
  std::vector<JobRecord> jobs;
  std::vector<JobVariant> variants;
  std::vector<ProfileSample> profiles;
};

class Store {
 public:
  // Opens (creating if needed) the database at path; ":memory:" gives a throw-away one.
  static Expected<std::unique_ptr<Store>> open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // A job seen for the first time, with the pod that introduced it. Idempotent on ids.
  Status record_arrival(const JobRecord& job);
  Status record_variant(const JobVariant& variant);
  // The job was bound: phase running and a usage row opened, in one transaction.
  Status record_start(const JobRecord& job);
  // The job finished at `finish`: phase done and its usage row closed, in one transaction.
  Status record_finish(const std::string& job_id, double finish);
  Status record_profile(const ProfileSample& sample);
  // The pod is no longer a variant of its job (deleted, or its job was admitted to another
  // variant); a queued job left without variants is forgotten with it. One transaction.
  Status forget_variant(const PodIdentity& pod, const std::string& job_id);

  Expected<StoredState> load();
  // Usage rows that overlap [since, now]: open rows and rows that ended after `since`.
  Expected<std::vector<UsageRecord>> usage_since(double since);

 private:
  explicit Store(sqlite3* db) : db_(db) {}
  Status exec(const char* sql);

  std::mutex mu_;
  sqlite3* db_;
};

}  // namespace allox::extender
