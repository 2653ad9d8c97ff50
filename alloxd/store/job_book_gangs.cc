// The job book's gangs (job_book.h, BookJob::is_gang): a gang parked when no inventory of one
// type could ever hold it, its start on k slots of one type on each member's node (all or
// none), its members' ends, and its place again after an inventory change or a restart.
#include <algorithm>
#include <map>
#include <string>

#include "alloxd/store/job_book.h"

namespace allox::extender {
namespace {

// The units each member needs: the most any member asks for.
int member_units(const BookJob& job) {
  int units = 1;
  for (const auto& [key, variant] : job.variants) units = std::max(units, variant.units);
  return units;
}

}  // namespace

std::string JobBook::gang_too_large(const BookJob& job) const {
  if (job.is_gang() && job.record.gang > kMaxGangBoundTogether) {
    const std::string n = std::to_string(job.record.gang);
    return "gang of " + n + " members: alloxd binds at most " +
           std::to_string(kMaxGangBoundTogether) + " together (" +
           std::string(kGangSizeAnnotation) + ": \"" + n + "\")";
  }
  if (!job.is_gang() || job.variants.empty() || !has_inventory_) return "";
  const int k = member_units(job);
  const int n = job.record.gang;
  const JobVariant& first = job.variants.begin()->second;
  std::string why;
  for (const DeviceType& type : first.device_types()) {
    if (!offered_.count(type)) continue;
    // Placements of k units on one node, over every node of the type: fragmentation counts
    // (two nodes of 3 GPUs hold two members of 2, not three).
    int placements = 0;
    for (const auto& [name, node] : nodes_) {
      auto units = node.machines.find(type);
      if (units != node.machines.end()) placements += units->second / k;
    }
    if (placements >= n) return "";
    auto total = totals_.find(type);
    why += (why.empty() ? "" : "; ") + type + " has room for " + std::to_string(placements) + " (" +
           std::to_string(total == totals_.end() ? 0 : total->second) + " " +
           devices_.resource_for(type) + " in all)";
  }
  if (why.empty()) why = "the inventory offers none of its device types";
  return "no inventory can hold gang of " + std::to_string(n) + " × " + first.device +
         (k > 1 ? " ×" + std::to_string(k) : "") + ": " + why;
}

void JobBook::place_gang(BookJob& job) {
  const int k = std::clamp(job.record.units, 1, kMaxUnits);
  for (const auto& [key, node] : job.member_nodes) {
    std::vector<int> free = free_slots(node, job.record.device);
    if (static_cast<int>(free.size()) > k) free.resize(static_cast<std::size_t>(k));
    for (int s : free) {
      slots_[s].running_job = job.record.id;
      if (job.slot < 0) {
        job.slot = s;
      } else {
        job.other_slots.push_back(s);
      }
    }
  }
}

Expected<JobRecord> JobBook::start_gang(const std::string& job_id,
                                        const std::map<std::string, std::string>& member_nodes,
                                        const DeviceType& device, double now) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return Error{"job " + job_id + " is unknown to allox"};
  BookJob& job = it->second;
  if (job.record.phase != JobPhase::kQueued) {
    return Error{"job " + job_id + " is " + phase_name(job.record.phase) + ", not queued"};
  }
  if (!job.is_gang() || static_cast<int>(member_nodes.size()) != job.record.gang) {
    return Error{"job " + job_id + " is a gang of " + std::to_string(job.record.gang) + ", not " +
                 std::to_string(member_nodes.size())};
  }
  const int k = member_units(job);
  // Every node's free slots once, then each member takes k of its node's: all or none.
  std::map<std::string, std::vector<int>> free;
  for (const auto& [key, node] : member_nodes) {
    if (!job.variants.count(key)) return Error{"pod " + key + " is not a member of " + job_id};
    if (!free.count(node)) free[node] = free_slots(node, device);
    std::vector<int>& left = free[node];
    if (static_cast<int>(left.size()) < k) {
      return Error{"node " + node + " has too few free " + devices_.resource_for(device) +
                   " for member " + key + " of gang " + job_id + " (needs " + std::to_string(k) +
                   ")"};
    }
    left.erase(left.begin(), left.begin() + k);
  }
  job.slot = -1;
  job.other_slots.clear();
  job.member_nodes = member_nodes;
  job.members_ended.clear();
  job.record.units = k;
  job.record.device = device;
  place_gang(job);
  for (const auto& [key, node] : member_nodes) capacity_[node][device].free -= k;
  const auto& [first_key, first_node] = *member_nodes.begin();
  const JobVariant& first = job.variants.at(first_key);
  job.record.phase = JobPhase::kRunning;
  job.record.pod_namespace = first.pod.namespace_name;
  job.record.pod_name = first.pod.name;
  job.record.pod_uid = first.pod.uid;
  job.record.node = first_node;
  job.record.device = device;
  job.record.machine = slots_[static_cast<std::size_t>(job.slot)].index;
  job.record.units = k;
  job.record.start = std::max(now, job.record.arrival);  // never before its arrival
  job.intent.reset();
  job.parked.clear();
  job.gang_note.clear();
  refresh(job);
  --queued_;
  ++running_;
  ++version_;
  return job.record;
}

bool JobBook::end_member(const std::string& job_id, const std::string& pod_key) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || it->second.record.phase != JobPhase::kRunning) return false;
  BookJob& job = it->second;
  if (job.member_nodes.count(pod_key)) job.members_ended.insert(pod_key);
  return job.members_ended.size() >= job.member_nodes.size();
}

void JobBook::note_gang(const std::string& job_id, const std::string& note) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || it->second.record.phase != JobPhase::kQueued) return;
  it->second.gang_note = note;
  refresh(it->second);
  ++version_;
}

}  // namespace allox::extender
