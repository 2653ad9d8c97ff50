// Builds small ClusterState snapshots for the fairness tests. Jobs live in the builder (the
// snapshot points at them), so keep the builder alive while the state is in use.
#pragma once

#include <deque>
#include <map>
#include <string>

#include "fairness/policy.h"

namespace allox::testing {

class StateBuilder {
 public:
  explicit StateBuilder(double now = 0) { state_.now = now; }

  StateBuilder& machine(const std::string& name, const DeviceType& device) {
    state_.machines.push_back({name, device, 0});
    state_.idle.push_back(true);
    return *this;
  }
  StateBuilder& user(const std::string& name, double weight) {
    state_.users.push_back({name, weight});
    return *this;
  }
  StateBuilder& queued(const std::string& id, const std::string& user, double since,
                       std::map<DeviceType, double> time, double attained = 0) {
    const Job& job = add_job(id, user, since, std::move(time));
    state_.queue.push_back({&job, since, attained, {}});
    return *this;
  }
  // Runs the job on the named machine, which becomes busy until start + its time there;
  // `attained` is service from earlier runs.
  StateBuilder& running(const std::string& id, const std::string& user, const std::string& machine,
                        double start, std::map<DeviceType, double> time, double attained = 0) {
    const Job& job = add_job(id, user, start, std::move(time));
    std::size_t m = index_of(machine);
    double finish = start + job.time.at(state_.machines[m].device);
    state_.machines[m].busy_until = finish;
    state_.idle[m] = false;
    // As the callers do: service up to now, this run included.
    state_.running.push_back({&job, m, start, finish, attained + (state_.now - start)});
    return *this;
  }

  // What job `id` (queued or running) holds while it runs on `device` (Job::holds).
  StateBuilder& holds(const std::string& id, const DeviceType& device,
                      std::map<std::string, double> amounts) {
    for (Job& job : jobs_) {
      if (job.id == id) job.holds[device] = std::move(amounts);
    }
    return *this;
  }

  std::size_t index_of(const std::string& machine) const {
    for (std::size_t i = 0; i < state_.machines.size(); ++i) {
      if (state_.machines[i].name == machine) return i;
    }
    return state_.machines.size();
  }
  ClusterState& state() { return state_; }

 private:
  const Job& add_job(const std::string& id, const std::string& user, double arrival,
                     std::map<DeviceType, double> time) {
    Job job;
    job.id = id;
    job.user = user;
    job.arrival = arrival;
    job.time = std::move(time);
    return jobs_.emplace_back(std::move(job));
  }

  std::deque<Job> jobs_;
  ClusterState state_;
};

// "job@machine" strings, in decision order, so a failure shows the whole decision.
inline std::vector<std::string> starts(const Decision& d, const ClusterState& s) {
  std::vector<std::string> out;
  for (const Placement& p : d.start) out.push_back(p.job_id + "@" + s.machines[p.machine].name);
  return out;
}

}  // namespace allox::testing
