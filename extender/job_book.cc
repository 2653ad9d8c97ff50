#include "extender/job_book.h"

#include <algorithm>
#include <set>

namespace allox::extender {
namespace {

std::string pod_key(const std::string& namespace_name, const std::string& name) {
  return namespace_name + "/" + name;
}

}  // namespace

JobBook::JobBook(DeviceMapping devices, double default_job_seconds)
    : devices_(std::move(devices)), default_job_seconds_(default_job_seconds) {}

void JobBook::set_inventory(const std::vector<NodeInventory>& nodes) {
  nodes_.clear();
  slots_.clear();
  for (const NodeInventory& node : nodes) {
    nodes_[node.name] = node;
    for (const auto& [device, count] : node.machines) {
      for (int i = 0; i < count; ++i) slots_.push_back({node.name, device, i, ""});
    }
  }
  for (auto& [id, job] : jobs_) {
    job.slot = -1;
    if (job.record.phase != JobPhase::kRunning) continue;
    for (std::size_t s = 0; s < slots_.size(); ++s) {
      MachineSlot& slot = slots_[s];
      if (slot.node == job.record.node && slot.device == job.record.device &&
          slot.index == job.record.machine && slot.running_job.empty()) {
        slot.running_job = id;
        job.slot = static_cast<int>(s);
        break;
      }
    }
  }
  recount_capacity();
  has_inventory_ = true;
  ++version_;
}

NodeCapacity JobBook::capacity(const std::string& node, const DeviceType& device) const {
  auto it = capacity_.find(node);
  if (it == capacity_.end()) return {};
  auto c = it->second.find(device);
  return c == it->second.end() ? NodeCapacity{} : c->second;
}

void JobBook::recount_capacity() {
  capacity_.clear();
  for (const MachineSlot& slot : slots_) {
    NodeCapacity& c = capacity_[slot.node][slot.device];
    ++c.total;
    if (slot.running_job.empty()) ++c.free;
  }
}

JobBook::Added JobBook::add_variant(const JobVariant& variant, double now) {
  Added added;
  auto [it, created] = jobs_.try_emplace(variant.job_id);
  BookJob& job = it->second;
  if (created) {
    job.record.id = variant.job_id;
    job.record.user = variant.user;
    job.record.arrival = now;
    ++queued_;
    added.new_job = true;
  }
  std::string key = pod_key(variant.pod.namespace_name, variant.pod.name);
  auto existing = job.variants.find(key);
  if (existing == job.variants.end() || existing->second.device != variant.device ||
      existing->second.time_hints != variant.time_hints ||
      existing->second.iterations != variant.iterations ||
      existing->second.pod.uid != variant.pod.uid) {
    job.variants[key] = variant;
    added.new_variant = true;
  }
  if (variant.iterations) job.iterations = variant.iterations;
  pod_to_job_[key] = variant.job_id;
  if (added.new_job || added.new_variant) ++version_;
  return added;
}

bool JobBook::remove_variant(const std::string& namespace_name, const std::string& name) {
  std::string key = pod_key(namespace_name, name);
  auto owner = pod_to_job_.find(key);
  if (owner == pod_to_job_.end()) return false;
  auto it = jobs_.find(owner->second);
  pod_to_job_.erase(owner);
  if (it == jobs_.end()) return false;
  BookJob& job = it->second;
  bool removed = job.variants.erase(key) > 0;
  if (job.variants.empty() && job.record.phase == JobPhase::kQueued) {
    jobs_.erase(it);
    --queued_;
  }
  ++version_;
  return removed;
}

void JobBook::restore(const StoredState& state) {
  for (const JobRecord& record : state.jobs) {
    BookJob& job = jobs_[record.id];
    job.record = record;
    if (record.phase == JobPhase::kQueued) ++queued_;
    if (record.phase == JobPhase::kRunning) ++running_;
  }
  for (const JobVariant& variant : state.variants) {
    auto it = jobs_.find(variant.job_id);
    if (it == jobs_.end()) continue;  // a variant row without its job: the job write failed
    it->second.variants[pod_key(variant.pod.namespace_name, variant.pod.name)] = variant;
    if (variant.iterations) it->second.iterations = variant.iterations;
    pod_to_job_[pod_key(variant.pod.namespace_name, variant.pod.name)] = variant.job_id;
  }
  for (const ProfileSample& sample : state.profiles) add_sample(sample);
  if (has_inventory_) {
    std::vector<NodeInventory> nodes;
    for (const auto& [name, node] : nodes_) nodes.push_back(node);
    set_inventory(nodes);
  }
  ++version_;
}

const BookJob* JobBook::job(const std::string& id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const BookJob* JobBook::job_of_pod(const std::string& namespace_name,
                                   const std::string& name) const {
  auto it = pod_to_job_.find(pod_key(namespace_name, name));
  return it == pod_to_job_.end() ? nullptr : job(it->second);
}

int JobBook::find_slot(const std::string& node, const DeviceType& device,
                       const std::string& job) const {
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const MachineSlot& slot = slots_[s];
    if (slot.node == node && slot.device == device && slot.running_job == job) {
      return static_cast<int>(s);
    }
  }
  return -1;
}

Expected<JobRecord> JobBook::start(const std::string& job_id, const JobVariant& pod_variant,
                                   const std::string& node, int preferred_slot, double now) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return Error{"job " + job_id + " is unknown to allox"};
  BookJob& job = it->second;
  if (job.record.phase == JobPhase::kRunning) {
    return Error{"job " + job_id + " is already running as pod " + job.record.pod_namespace + "/" +
                 job.record.pod_name + " on " + job.record.node};
  }
  if (job.record.phase == JobPhase::kDone) return Error{"job " + job_id + " has finished"};
  if (!has_node(node)) return Error{"node " + node + " is not in allox's inventory"};
  int slot = -1;
  if (preferred_slot >= 0 && preferred_slot < static_cast<int>(slots_.size()) &&
      slots_[preferred_slot].node == node && slots_[preferred_slot].device == pod_variant.device &&
      slots_[preferred_slot].running_job.empty()) {
    slot = preferred_slot;
  } else {
    slot = find_slot(node, pod_variant.device, "");
  }
  if (slot < 0) {
    NodeCapacity c = capacity(node, pod_variant.device);
    return Error{"node " + node + " has no free " + devices_.resource_for(pod_variant.device) +
                 " (" + std::to_string(c.free) + " of " + std::to_string(c.total) + " free)"};
  }
  MachineSlot& machine = slots_[slot];
  machine.running_job = job_id;
  --capacity_[node][pod_variant.device].free;
  job.slot = slot;
  job.record.phase = JobPhase::kRunning;
  job.record.pod_namespace = pod_variant.pod.namespace_name;
  job.record.pod_name = pod_variant.pod.name;
  job.record.pod_uid = pod_variant.pod.uid;
  job.record.node = node;
  job.record.device = pod_variant.device;
  job.record.machine = machine.index;
  job.record.start = now;
  --queued_;
  ++running_;
  ++version_;
  return job.record;
}

Expected<JobRecord> JobBook::finish(const std::string& job_id, double now) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return Error{"job " + job_id + " is unknown to allox"};
  BookJob& job = it->second;
  if (job.record.phase != JobPhase::kRunning) {
    return Error{"job " + job_id + " is " + phase_name(job.record.phase) + ", not running"};
  }
  if (job.slot >= 0) {
    MachineSlot& machine = slots_[job.slot];
    machine.running_job.clear();
    ++capacity_[machine.node][machine.device].free;
  }
  job.slot = -1;
  job.record.phase = JobPhase::kDone;
  job.record.finish = now;
  --running_;
  ++version_;
  return job.record;
}

void JobBook::add_sample(const ProfileSample& sample) {
  auto it = jobs_.find(sample.job_id);
  if (it == jobs_.end()) return;
  it->second.samples.push_back(sample);
  ++version_;
}

TimeEstimate JobBook::estimate(const BookJob& job, const DeviceType& device) const {
  std::vector<ProfileSample> samples;
  for (const ProfileSample& s : job.samples) {
    if (s.device == device) samples.push_back(s);
  }
  std::optional<double> hint;
  for (const auto& [key, variant] : job.variants) {
    auto h = variant.time_hints.find(device);
    if (h != variant.time_hints.end()) hint = h->second;
  }
  return estimate_time(samples, job.iterations, hint, default_job_seconds_);
}

double JobBook::remaining(const BookJob& job, double now) const {
  std::optional<ProfileSample> progress;
  for (const ProfileSample& s : job.samples) {
    if (s.kind == ProfileSample::Kind::kProgress && s.device == job.record.device &&
        (!progress || s.at >= progress->at)) {
      progress = s;
    }
  }
  return estimate_remaining(estimate(job, job.record.device).seconds, job.record.start, now,
                            job.iterations, progress);
}

PlanInput JobBook::snapshot(double now) const {
  PlanInput input;
  input.version = version_;
  ClusterState& state = input.state;
  state.now = now;
  std::set<DeviceType> offered;
  std::map<std::string, std::size_t> slot_of_job;
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const MachineSlot& slot = slots_[s];
    offered.insert(slot.device);
    Machine machine{slot.node + "/" + slot.device + "-" + std::to_string(slot.index), slot.device,
                    now};
    if (!slot.running_job.empty()) {
      const BookJob& job = jobs_.at(slot.running_job);
      machine.busy_until = now + remaining(job, now);
      slot_of_job[slot.running_job] = s;
    }
    state.machines.push_back(std::move(machine));
    state.idle.push_back(slot.running_job.empty());
  }

  // Deterministic order: by arrival, then id.
  std::vector<const BookJob*> ordered;
  for (const auto& [id, job] : jobs_) {
    if (job.record.phase != JobPhase::kDone) ordered.push_back(&job);
  }
  std::sort(ordered.begin(), ordered.end(), [](const BookJob* a, const BookJob* b) {
    return std::tie(a->record.arrival, a->record.id) < std::tie(b->record.arrival, b->record.id);
  });
  std::set<std::string> users;
  for (const BookJob* book_job : ordered) {
    Job job;
    job.id = book_job->record.id;
    job.user = book_job->record.user;
    job.arrival = book_job->record.arrival;
    job.iterations = book_job->iterations;
    users.insert(job.user);
    for (const auto& [key, variant] : book_job->variants) {
      if (offered.count(variant.device)) {
        job.time[variant.device] = estimate(*book_job, variant.device).seconds;
      }
    }
    if (book_job->record.phase == JobPhase::kRunning) {
      job.time[book_job->record.device] = estimate(*book_job, book_job->record.device).seconds;
      auto slot = slot_of_job.find(job.id);
      if (slot == slot_of_job.end()) continue;  // its node left the inventory
      const Job& stored = input.jobs.emplace_back(std::move(job));
      state.running.push_back({&stored, slot->second, book_job->record.start,
                               state.machines[slot->second].busy_until,
                               now - book_job->record.start});
      continue;
    }
    if (job.time.empty()) {
      input.unrunnable.push_back(job.id);
      continue;
    }
    const Job& stored = input.jobs.emplace_back(std::move(job));
    state.queue.push_back({&stored, book_job->record.arrival, 0, {}});
  }
  for (const std::string& user : users) state.users.push_back({user, 1});
  return input;
}

}  // namespace allox::extender
