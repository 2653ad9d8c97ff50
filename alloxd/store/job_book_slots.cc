// The job book's machine slots: the inventory turned into slots (running jobs placed back on
// theirs), the capacity index, and a job's start on k slots of one type on one node and its end
// freeing them (job_book.h).
#include <algorithm>
#include <set>

#include "alloxd/store/job_book.h"

namespace allox::extender {

void JobBook::set_inventory(const std::vector<NodeInventory>& nodes) {
  nodes_.clear();
  slots_.clear();
  node_slots_.clear();
  machines_.clear();
  std::set<DeviceType> offered;
  auto facts = std::make_shared<NodeFactsIndex>();
  for (const NodeInventory& node : nodes) {
    nodes_[node.name] = node;
    if (!node.facts.name.empty()) facts->emplace(node.name, node.facts);
    for (const auto& [device, count] : node.machines) {
      for (int i = 0; i < count; ++i) {
        node_slots_[node.name].push_back(static_cast<int>(slots_.size()));
        slots_.push_back({node.name, device, i, ""});
        machines_.push_back(
            {node.name + "/" + device + "-" + std::to_string(i), device, 0, node.name});
        offered.insert(device);
      }
    }
  }
  layout_ = std::make_shared<const std::vector<MachineSlot>>(slots_);
  node_facts_ = std::move(facts);
  // Every running job's recorded slot first, then the rest of its units from what is free: a
  // job that took its node's higher slots first (its preferred one) keeps them beside another's.
  for (auto& [id, job] : jobs_) {
    job.slot = -1;
    job.other_slots.clear();
  }
  for (bool recorded_slot_only : {true, false}) {
    for (auto& [id, job] : jobs_) {
      if (job.record.phase != JobPhase::kRunning) continue;
      if (!job.is_gang()) {
        place_running(job, recorded_slot_only);
      } else if (!recorded_slot_only) {
        place_gang(job);
      }
    }
  }
  recount_capacity();
  has_inventory_ = true;
  std::map<DeviceType, int> largest = allox::largest_node_units(machines_);
  std::map<DeviceType, int> totals;
  for (const MachineSlot& slot : slots_) ++totals[slot.device];
  if (offered != offered_ || largest != largest_ || totals != totals_) {
    // A job's planned times cover the offered devices a node is large enough on.
    offered_ = std::move(offered);
    largest_ = std::move(largest);
    totals_ = std::move(totals);
    for (auto& [id, job] : jobs_) refresh(job);
  }
  ++version_;
}

void JobBook::place_running(BookJob& job, bool recorded_slot_only) {
  const JobRecord& record = job.record;
  if (recorded_slot_only) {
    auto on_node = node_slots_.find(record.node);
    if (on_node == node_slots_.end()) return;
    for (int s : on_node->second) {
      MachineSlot& slot = slots_[s];
      if (slot.device == record.device && slot.index == record.machine &&
          slot.running_job.empty()) {
        slot.running_job = record.id;
        job.slot = s;
        return;
      }
    }
    return;
  }
  const int units = std::clamp(record.units, 1, kMaxUnits);
  for (int s : free_slots(record.node, record.device)) {
    if (1 + static_cast<int>(job.other_slots.size()) >= units && job.slot >= 0) break;
    slots_[s].running_job = record.id;
    if (job.slot < 0) {
      job.slot = s;
    } else {
      job.other_slots.push_back(s);
    }
  }
}

std::vector<int> JobBook::free_slots(const std::string& node, const DeviceType& device) const {
  std::vector<int> free;
  auto on_node = node_slots_.find(node);
  if (on_node == node_slots_.end()) return free;
  for (int s : on_node->second) {
    const MachineSlot& slot = slots_[s];
    if (slot.device == device && slot.running_job.empty()) free.push_back(s);
  }
  return free;
}

std::optional<DeviceType> JobBook::device_on(std::string_view node,
                                             const JobVariant& variant) const {
  auto it = capacity_.find(node);
  if (it == capacity_.end()) return std::nullopt;
  for (const DeviceType& type : variant.device_types()) {
    auto c = it->second.find(type);
    if (c != it->second.end() && c->second.total > 0) return type;
  }
  return std::nullopt;
}

NodeCapacity JobBook::capacity(std::string_view node, std::string_view device) const {
  return find_capacity(node, device).value_or(NodeCapacity{});
}

std::optional<NodeCapacity> JobBook::find_capacity(std::string_view node,
                                                   std::string_view device) const {
  auto it = capacity_.find(node);
  if (it == capacity_.end()) return std::nullopt;
  auto c = it->second.find(device);
  return c == it->second.end() ? NodeCapacity{} : c->second;
}

void JobBook::recount_capacity() {
  capacity_.clear();
  for (const auto& [name, node] : nodes_) capacity_[name];  // nodes without machines count too
  for (const MachineSlot& slot : slots_) {
    NodeCapacity& c = capacity_[slot.node][slot.device];
    ++c.total;
    if (slot.running_job.empty()) ++c.free;
  }
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
  if (job.record.phase != JobPhase::kQueued) {  // removed: never started, never counted again
    return Error{"job " + job_id + " is " + phase_name(job.record.phase) +
                 "; only a queued job starts"};
  }
  if (!has_node(node)) return Error{"node " + node + " is not in allox's inventory"};
  const int units = std::max(1, pod_variant.units);
  // One type for all its units: the plan's (the preferred slot's) when it is one of the pod's
  // and has enough free there, else the first of the pod's types that has.
  std::vector<DeviceType> types = pod_variant.device_types();
  if (preferred_slot >= 0 && preferred_slot < static_cast<int>(slots_.size()) &&
      slots_[preferred_slot].node == node) {
    auto planned = std::find(types.begin(), types.end(), slots_[preferred_slot].device);
    if (planned != types.end()) std::rotate(types.begin(), planned, planned + 1);
  }
  std::vector<int> free;
  DeviceType device;
  for (const DeviceType& type : types) {
    free = free_slots(node, type);
    device = type;
    if (static_cast<int>(free.size()) >= units) break;
  }
  if (static_cast<int>(free.size()) < units) {
    const DeviceType type = device_on(node, pod_variant).value_or(pod_variant.device);
    NodeCapacity c = capacity(node, type);
    const DeviceMapping::Resource* own = devices_.resource_of(type);
    const std::string resource = devices_.resource_for(type) +
                                 (own != nullptr && own->device != type ? " of model " + type : "");
    if (units == 1) {
      return Error{"node " + node + " has no free " + resource + " (" + std::to_string(c.free) +
                   " of " + std::to_string(c.total) + " free)"};
    }
    return Error{"node " + node + " has " + std::to_string(c.free) + " of " +
                 std::to_string(c.total) + " " + resource + " free; pod " +
                 pod_key(pod_variant.pod) + " needs " + std::to_string(units)};
  }
  // The preferred slot first when it is free there, then the lowest free ones.
  auto preferred = std::find(free.begin(), free.end(), preferred_slot);
  if (preferred != free.end()) std::rotate(free.begin(), preferred, preferred + 1);
  free.resize(static_cast<std::size_t>(units));
  for (int s : free) slots_[s].running_job = job_id;
  capacity_[node][device].free -= units;
  const int slot = free.front();
  const MachineSlot& machine = slots_[slot];
  job.slot = slot;
  job.other_slots.assign(free.begin() + 1, free.end());
  job.record.phase = JobPhase::kRunning;
  job.record.pod_namespace = pod_variant.pod.namespace_name;
  job.record.pod_name = pod_variant.pod.name;
  job.record.pod_uid = pod_variant.pod.uid;
  job.record.node = node;
  job.record.device = device;  // the type it runs as, of the ones it offered
  job.record.machine = machine.index;
  job.record.units = units;
  // Never before its arrival: the wall clock may have stepped back (NTP, a restored VM) since.
  job.record.start = std::max(now, job.record.arrival);
  job.intent.reset();
  job.parked.clear();
  refresh(job);
  --queued_;
  ++running_;
  ++version_;
  return job.record;
}

void JobBook::free_slots(BookJob& job) {
  if (job.slot >= 0) job.other_slots.push_back(job.slot);
  for (int s : job.other_slots) {
    MachineSlot& machine = slots_[s];
    machine.running_job.clear();
    ++capacity_[machine.node][machine.device].free;
  }
  job.slot = -1;
  job.other_slots.clear();
}

Expected<JobRecord> JobBook::finish(const std::string& job_id, double now) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return Error{"job " + job_id + " is unknown to allox"};
  BookJob& job = it->second;
  if (job.record.phase != JobPhase::kRunning) {
    return Error{"job " + job_id + " is " + phase_name(job.record.phase) + ", not running"};
  }
  free_slots(job);
  job.record.phase = JobPhase::kDone;
  job.record.finish = std::max(now, job.record.start);  // never before its start (clock steps)
  refresh(job);
  --running_;
  ++version_;
  return job.record;
}

Expected<JobRecord> JobBook::requeue(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return Error{"job " + job_id + " is unknown to allox"};
  BookJob& job = it->second;
  if (job.record.phase != JobPhase::kRunning) {
    return Error{"job " + job_id + " is " + phase_name(job.record.phase) + ", not running"};
  }
  free_slots(job);
  const std::string ran = job.record.pod_namespace + "/" + job.record.pod_name;
  job.variants.erase(ran);
  pod_to_job_.erase(ran);
  // A gang's members all ran: its Job makes each of them again, and the gang waits for all N.
  for (const auto& [key, node] : job.member_nodes) {
    job.variants.erase(key);
    pod_to_job_.erase(key);
  }
  job.member_nodes.clear();
  job.members_ended.clear();
  job.record.phase = JobPhase::kQueued;
  job.record.node.clear();
  refresh(job);
  --running_;
  ++queued_;
  ++version_;
  return job.record;
}

}  // namespace allox::extender
