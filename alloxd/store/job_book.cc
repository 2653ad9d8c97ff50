#include "alloxd/store/job_book.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "alloxd/store/store.h"

namespace allox::extender {
namespace {

std::string pod_key(const std::string& namespace_name, const std::string& name) {
  return namespace_name + "/" + name;
}

}  // namespace

JobBook::JobBook(DeviceMapping devices, double default_job_seconds,
                 std::shared_ptr<const ThroughputTable> throughputs)
    : devices_(std::move(devices)),
      default_job_seconds_(default_job_seconds),
      throughputs_(std::move(throughputs)) {}

namespace {

bool same_variant(const JobVariant& a, const JobVariant& b) {
  return a.device == b.device && a.units == b.units && a.time_hints == b.time_hints &&
         a.iterations == b.iterations && a.pod.uid == b.pod.uid && a.user == b.user &&
         a.devices == b.devices && a.model == b.model && a.batch_size == b.batch_size &&
         a.gang == b.gang && a.placement_key == b.placement_key;
}

// A pod this run has seen: one of its variants, or the pod it ran as. An empty UID cannot tell
// a re-created pod from the old one, so it counts as seen.
bool seen_by_run(const BookJob& job, const JobVariant& variant) {
  if (variant.pod.uid.empty() || variant.pod.uid == job.record.pod_uid) return true;
  for (const auto& [key, known] : job.variants) {
    if (known.pod.uid == variant.pod.uid) return true;
  }
  return false;
}

}  // namespace

JobBook::Change JobBook::classify(const JobVariant& variant) const {
  auto it = jobs_.find(variant.job_id);
  if (it == jobs_.end()) return Change::kNewRun;
  const BookJob& job = it->second;
  if (job.record.phase == JobPhase::kDone || job.record.phase == JobPhase::kRemoved) {
    if (seen_by_run(job, variant)) return Change::kNone;
    // A new UID under a name the run had is that pod re-created: a new run. Under another
    // name it is a variant the run never saw (still pending when the job finished): starting
    // it would run the job twice.
    const bool recreated =
        job.variants.count(pod_key(variant.pod.namespace_name, variant.pod.name)) != 0;
    return recreated ? Change::kNewRun : Change::kNone;
  }
  auto existing = job.variants.find(pod_key(variant.pod.namespace_name, variant.pod.name));
  if (existing != job.variants.end() && same_variant(existing->second, variant)) {
    return Change::kNone;
  }
  return Change::kVariant;
}

void JobBook::add_run(const JobRecord& record, const JobVariant& first) {
  auto it = jobs_.find(record.id);
  if (it != jobs_.end()) {
    // The old run is finished or removed: its pods no longer lead here.
    for (const auto& [key, variant] : it->second.variants) pod_to_job_.erase(key);
    if (it->second.record.phase == JobPhase::kQueued) --queued_;
    if (it->second.record.phase == JobPhase::kRunning) --running_;
    erase_job(it);
  }
  BookJob& job = jobs_[record.id];
  job.record = record;
  job.record.phase = JobPhase::kQueued;
  ++queued_;
  add_variant(first);
}

void JobBook::add_variant(const JobVariant& variant) {
  auto it = jobs_.find(variant.job_id);
  if (it == jobs_.end()) return;
  BookJob& job = it->second;
  std::string key = pod_key(variant.pod.namespace_name, variant.pod.name);
  job.variants[key] = variant;
  if (variant.iterations) job.iterations = variant.iterations;
  job.parked.clear();  // a changed pod may now be one the policy can take
  pod_to_job_[key] = variant.job_id;
  refresh(job);
  ++version_;
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
  // A rolled-back gang stays, with its note, until its members come back (or an admin removes it).
  if (job.variants.empty() && job.record.phase == JobPhase::kQueued && job.gang_note.empty()) {
    erase_job(it);
    --queued_;
  } else {
    refresh(job);
  }
  ++version_;
  return removed;
}

void JobBook::restore(const StoredState& state) {
  for (const JobRecord& record : state.jobs) {
    auto it = jobs_.find(record.id);
    if (it != jobs_.end()) {
      if (it->second.record.phase == JobPhase::kQueued) --queued_;
      if (it->second.record.phase == JobPhase::kRunning) --running_;
      erase_job(it);
    }
    BookJob& job = jobs_[record.id];
    job.record = record;
    if (record.phase == JobPhase::kQueued) ++queued_;
    if (record.phase == JobPhase::kRunning) ++running_;
  }
  auto run_of = [&](const std::string& id, std::int64_t row) -> BookJob* {
    auto it = jobs_.find(id);
    return it != jobs_.end() && it->second.record.row == row ? &it->second : nullptr;
  };
  for (const StoredVariant& stored : state.variants) {
    const JobVariant& variant = stored.variant;
    BookJob* job = run_of(variant.job_id, stored.job_row);
    if (job == nullptr) continue;  // a variant of an older run
    std::string key = pod_key(variant.pod.namespace_name, variant.pod.name);
    job->variants[key] = variant;
    if (variant.iterations) job->iterations = variant.iterations;
    pod_to_job_[key] = variant.job_id;
    if (!stored.node.empty()) job->member_nodes[key] = stored.node;
  }
  for (const ProfileSample& sample : state.profiles) {
    if (BookJob* job = run_of(sample.job_id, sample.job_row)) job->samples.push_back(sample);
  }
  for (const BindIntent& intent : state.intents) {
    BookJob* job = run_of(intent.job_id, intent.job_row);
    if (job != nullptr && job->record.phase == JobPhase::kQueued) job->intent = intent;
  }
  if (has_inventory_) {
    std::vector<NodeInventory> nodes;
    for (const auto& [name, node] : nodes_) nodes.push_back(node);
    set_inventory(nodes);
  }
  for (auto& [id, job] : jobs_) refresh(job);
  ++version_;
}

void JobBook::park(const std::string& job_id, const std::string& reason) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || it->second.record.phase != JobPhase::kQueued) return;
  it->second.parked = reason;
  refresh(it->second);
  ++version_;
}

Expected<JobRecord> JobBook::remove(const std::string& job_id, double now) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return Error{"job " + job_id + " is unknown to allox"};
  BookJob& job = it->second;
  if (job.record.phase != JobPhase::kQueued) {
    return Error{"job " + job_id + " is " + phase_name(job.record.phase) +
                 "; only a queued job can be removed"};
  }
  if (job.intent) {
    return Error{"job " + job_id + " has a bind to " + job.intent->node +
                 " in doubt; try again once it is reconciled"};
  }
  job.record.phase = JobPhase::kRemoved;
  job.record.finish = std::max(now, job.record.arrival);
  job.parked.clear();
  refresh(job);
  --queued_;
  ++version_;
  return job.record;
}

std::size_t JobBook::forget_finished(double before) {
  // The finished runs in finish order: only those that go are looked at.
  std::size_t forgotten = 0;
  while (!finished_.empty() && (*finished_.begin())->record.finish < before) {
    const BookJob& job = **finished_.begin();
    for (const auto& [key, variant] : job.variants) {
      auto pod = pod_to_job_.find(key);
      if (pod != pod_to_job_.end() && pod->second == job.record.id) pod_to_job_.erase(pod);
    }
    erase_job(jobs_.find(job.record.id));
    ++forgotten;
  }
  if (forgotten > 0) ++version_;
  return forgotten;
}

void JobBook::clear_intent(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || !it->second.intent) return;
  it->second.intent.reset();
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

void JobBook::add_sample(const ProfileSample& sample) {
  auto it = jobs_.find(sample.job_id);
  if (it == jobs_.end()) return;
  it->second.samples.push_back(sample);
  refresh(it->second);
  ++version_;
}

TimeEstimate JobBook::estimate(const BookJob& job, const DeviceType& device) const {
  std::vector<ProfileSample> samples;
  for (const ProfileSample& s : job.samples) {
    if (s.device == device) samples.push_back(s);
  }
  std::optional<double> hint;
  std::optional<double> table;  // the throughput table's time, for a variant naming its model
  for (const auto& [key, variant] : job.variants) {
    auto h = variant.time_hints.find(device);
    if (h != variant.time_hints.end()) hint = h->second;
    if (!variant.model.empty() && throughputs_ && job.iterations) {
      if (auto t = table_time(*throughputs_, variant.model, variant.batch_size, device,
                              *job.iterations)) {
        table = t;
      }
    }
  }
  TimeEstimate estimate =
      estimate_time(samples, job.iterations, hint ? hint : table, default_job_seconds_);
  if (!hint && table && estimate.source == TimeEstimate::Source::kHint) {
    estimate.source = TimeEstimate::Source::kTable;
  }
  // Bounded here, where every estimate is read: a fit may come out NaN or astronomically large
  // (iterations near 2^63), and the matcher must never see either.
  if (!std::isfinite(estimate.seconds)) {
    estimate = estimate_time({}, job.iterations, hint, default_job_seconds_);
  }
  estimate.seconds = std::clamp(estimate.seconds, kMinJobSeconds, kMaxJobSeconds);
  return estimate;
}

namespace {

// The job's latest progress report on the device it runs on (the last of equal times).
std::optional<ProfileSample> latest_progress(const BookJob& job) {
  std::optional<ProfileSample> progress;
  for (const ProfileSample& s : job.samples) {
    if (s.kind == ProfileSample::Kind::kProgress && s.device == job.record.device &&
        (!progress || s.at >= progress->at)) {
      progress = s;
    }
  }
  return progress;
}

}  // namespace

double JobBook::remaining(const BookJob& job, double now) const {
  return estimate_remaining(estimate(job, job.record.device).seconds, job.record.start, now,
                            job.iterations, latest_progress(job));
}

void JobBook::refresh(BookJob& book_job) {
  auto job = std::make_shared<Job>();
  job->id = book_job.record.id;
  job->user = book_job.record.user;
  job->arrival = book_job.record.arrival;
  job->iterations = book_job.iterations;
  // Only the types some node is large enough on for the variant; the job asks for the most
  // units of the variants it keeps.
  std::string too_large;
  auto offer = [&](const std::string& key, const JobVariant& variant, const DeviceType& type) {
    if (!offered_.count(type)) return;
    auto largest = largest_.find(type);
    const int offered = largest == largest_.end() ? 0 : largest->second;
    if (variant.units > offered) {
      const DeviceMapping::Resource* resource = devices_.resource_of(type);
      const std::string model =
          resource != nullptr && resource->device != type ? " of model " + type : "";
      too_large += (too_large.empty() ? "" : "; ") + std::to_string(variant.units) + " " +
                   devices_.resource_for(type) + model + " on one node (pod " + key +
                   "), the largest node has " + std::to_string(offered);
      return;
    }
    job->units = std::max(job->units, variant.units);
    if (!job->time.count(type)) job->time[type] = estimate(book_job, type).seconds;
  };
  for (const auto& [key, variant] : book_job.variants) {
    // Every type it runs on (device_types() without its copy: a job may have thousands).
    if (variant.devices.empty()) offer(key, variant, variant.device);
    for (const DeviceType& type : variant.devices) offer(key, variant, type);
  }
  const JobPhase phase = book_job.record.phase;
  if (phase == JobPhase::kQueued) {
    // A gang's size is its members' (they all say it); its run is recorded with it.
    int gang = book_job.variants.empty() ? book_job.record.gang : 1;
    for (const auto& [key, variant] : book_job.variants) gang = std::max(gang, variant.gang);
    book_job.record.gang = gang;
  }
  std::string gang_park = phase == JobPhase::kQueued ? gang_too_large(book_job) : std::string();
  if (phase == JobPhase::kQueued && job->time.empty() && !too_large.empty()) {
    book_job.parked = "no node can hold it: " + too_large;
    book_job.parked_for_size = true;
  } else if (!gang_park.empty()) {
    book_job.parked = gang_park;
    book_job.parked_for_size = true;
  } else if (book_job.parked_for_size) {
    if (phase == JobPhase::kQueued) book_job.parked.clear();
    book_job.parked_for_size = false;
  }
  if (phase == JobPhase::kRunning) {
    book_job.run_estimate = estimate(book_job, book_job.record.device).seconds;
    book_job.progress = latest_progress(book_job);
    job->time[book_job.record.device] = book_job.run_estimate;
    job->units = std::clamp(book_job.record.units, 1, kMaxUnits);
    // A running gang's share counts every device it holds: N × k (fairness/share.h).
    if (book_job.is_gang()) job->units *= book_job.record.gang;
  } else {
    book_job.run_estimate = 0;
    book_job.progress.reset();
  }
  book_job.planned = std::move(job);
  book_job.placements.reset();
  if (phase == JobPhase::kQueued &&
      std::any_of(book_job.variants.begin(), book_job.variants.end(),
                  [](const auto& entry) { return entry.second.placement != nullptr; })) {
    auto placements = std::make_shared<std::vector<JobVariant>>();
    for (const auto& [key, variant] : book_job.variants) placements->push_back(variant);
    book_job.placements = std::move(placements);
  }
  // Filed where its phase belongs. Its keys (arrival, id; finish once done) do not change
  // while it is filed, so a set finds it by them.
  if (phase == JobPhase::kQueued || phase == JobPhase::kRunning) {
    active_.insert(&book_job);
  } else {
    active_.erase(&book_job);
  }
  if (phase == JobPhase::kDone) {
    finished_.insert(&book_job);
  } else {
    finished_.erase(&book_job);
  }
  if (phase == JobPhase::kQueued && !book_job.parked.empty()) {
    parked_.insert(book_job.record.id);
  } else {
    parked_.erase(book_job.record.id);
  }
}

void JobBook::erase_job(std::unordered_map<std::string, BookJob>::iterator it) {
  active_.erase(&it->second);
  finished_.erase(&it->second);
  parked_.erase(it->first);
  jobs_.erase(it);
}

PlanInput JobBook::snapshot(double now, const std::string* only) const {
  PlanInput input;
  input.version = version_;
  input.slots = layout_;
  ClusterState& state = input.state;
  state.now = now;
  state.machines = machines_;
  state.idle.resize(slots_.size());
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    state.machines[s].busy_until = now;
    state.idle[s] = slots_[s].running_job.empty();
  }
  // The active jobs, kept in plan order (arrival, then id): running ones on their slots
  // (busy until their estimated finish), queued ones unless parked or with a bind in doubt.
  if (only == nullptr) {  // tens of thousands of each at 5,000 nodes: no regrowth per plan
    input.jobs.reserve(queued_ + running_);
    state.running.reserve(running_);
    state.queue.reserve(queued_);
    input.queue_placements.reserve(queued_);
  }
  std::set<std::string_view> users;
  for (const BookJob* book_job : active_) {
    const JobRecord& record = book_job->record;
    const bool running = record.phase == JobPhase::kRunning;
    // A queued gang is not the policy's: the planner places it across nodes (plan_gangs).
    if (!running && (!book_job->parked.empty() || book_job->intent || book_job->is_gang() ||
                     (only != nullptr && *only != record.id))) {
      continue;
    }
    const std::shared_ptr<const Job>& job = book_job->planned;
    users.insert(job->user);
    if (running) {
      if (book_job->slot < 0) continue;  // its node left the inventory
      const auto slot = static_cast<std::size_t>(book_job->slot);
      const double finish = now + estimate_remaining(book_job->run_estimate, record.start, now,
                                                     book_job->iterations, book_job->progress);
      state.machines[slot].busy_until = finish;
      std::vector<std::size_t> others;
      for (int other : book_job->other_slots) {
        state.machines[static_cast<std::size_t>(other)].busy_until = finish;
        others.push_back(static_cast<std::size_t>(other));
      }
      input.jobs.push_back(job);
      state.running.push_back(
          {job.get(), slot, record.start, finish, now - record.start, std::move(others)});
      continue;
    }
    if (job->time.empty()) {
      input.unrunnable.push_back(record.id);
      continue;
    }
    input.jobs.push_back(job);
    state.queue.push_back({job.get(), record.arrival, 0, {}});
    input.queue_placements.push_back(book_job->placements);
  }
  input.nodes = node_facts_;
  for (std::string_view user : users) state.users.push_back({std::string(user), 1});
  return input;
}

}  // namespace allox::extender
