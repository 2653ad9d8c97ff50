// alloxd/store/job_book.h: the book keeps each job's planned times, its plan order, its finished
// runs and its parked jobs current on every change, so a snapshot computes nothing per job.
// The definition it must still meet is the snapshot computed from scratch (reference_snapshot
// below: every estimate, the order and the slots worked out again from the book's public
// state), compared after every step of random sequences of changes.
#include "alloxd/store/job_book.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <random>
#include <set>
#include <sstream>

#include "alloxd/store/store.h"

namespace allox::extender {
namespace {

std::string number(double x) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", x);
  return text;
}

// Everything the policy reads, in order, as text: two equal texts are equal inputs.
std::string render(const ClusterState& state, const std::vector<std::string>& unrunnable) {
  std::ostringstream out;
  out << "now " << number(state.now) << "\n";
  for (std::size_t m = 0; m < state.machines.size(); ++m) {
    const Machine& machine = state.machines[m];
    out << "machine " << machine.name << " " << machine.device << " " << number(machine.busy_until)
        << (state.idle[m] ? " idle" : " busy") << "\n";
  }
  auto job_text = [&](const Job& job) {
    std::string text = job.id + " user=" + job.user + " arrival=" + number(job.arrival) +
                       " iterations=" + (job.iterations ? std::to_string(*job.iterations) : "-");
    for (const auto& [device, seconds] : job.time) text += " " + device + "=" + number(seconds);
    return text;
  };
  for (const QueuedJob& q : state.queue) {
    out << "queued " << job_text(*q.job) << " since=" << number(q.queued_since)
        << " attained=" << number(q.attained_service) << " remaining=" << q.remaining.size()
        << "\n";
  }
  for (const RunningJob& r : state.running) {
    out << "running " << job_text(*r.job) << " machine=" << r.machine
        << " start=" << number(r.start) << " finish=" << number(r.estimated_finish)
        << " attained=" << number(r.attained_service) << "\n";
  }
  for (const User& user : state.users) out << "user " << user.name << " " << user.weight << "\n";
  for (const std::string& id : unrunnable) out << "unrunnable " << id << "\n";
  return out.str();
}

// The snapshot from scratch: what JobBook::snapshot computed before it kept anything.
std::string reference_snapshot(const JobBook& book, double now, const std::string* only) {
  ClusterState state;
  state.now = now;
  std::deque<Job> jobs;
  std::vector<std::string> unrunnable;
  std::set<DeviceType> offered;
  std::map<std::string, std::size_t> slot_of_job;
  for (std::size_t s = 0; s < book.slots().size(); ++s) {
    const MachineSlot& slot = book.slots()[s];
    offered.insert(slot.device);
    Machine machine{slot.node + "/" + slot.device + "-" + std::to_string(slot.index), slot.device,
                    now};
    if (!slot.running_job.empty()) {
      machine.busy_until = now + book.remaining(*book.job(slot.running_job), now);
      slot_of_job[slot.running_job] = s;
    }
    state.machines.push_back(std::move(machine));
    state.idle.push_back(slot.running_job.empty());
  }
  std::vector<const BookJob*> ordered;
  for (const auto& [id, job] : book.jobs()) {
    if (job.record.phase == JobPhase::kRunning ||
        (job.record.phase == JobPhase::kQueued && job.parked.empty() && !job.intent &&
         (only == nullptr || *only == id))) {
      ordered.push_back(&job);
    }
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
        job.time[variant.device] = book.estimate(*book_job, variant.device).seconds;
      }
    }
    if (book_job->record.phase == JobPhase::kRunning) {
      job.time[book_job->record.device] = book.estimate(*book_job, book_job->record.device).seconds;
      auto slot = slot_of_job.find(job.id);
      if (slot == slot_of_job.end()) continue;
      const Job& stored = jobs.emplace_back(std::move(job));
      state.running.push_back({&stored, slot->second, book_job->record.start,
                               state.machines[slot->second].busy_until,
                               now - book_job->record.start});
      continue;
    }
    if (job.time.empty()) {
      unrunnable.push_back(job.id);
      continue;
    }
    const Job& stored = jobs.emplace_back(std::move(job));
    state.queue.push_back({&stored, book_job->record.arrival, 0, {}});
  }
  for (const std::string& user : users) state.users.push_back({user, 1});
  return render(state, unrunnable);
}

std::string kept_snapshot(const JobBook& book, double now, const std::string* only) {
  PlanInput input = book.snapshot(now, only);
  EXPECT_EQ(book.version(), input.version);
  // The layout a plan names slots by is the inventory's, without who runs where.
  EXPECT_EQ(book.slots().size(), input.slots->size());
  for (std::size_t s = 0; s < book.slots().size() && s < input.slots->size(); ++s) {
    EXPECT_EQ(book.slots()[s].node, (*input.slots)[s].node);
    EXPECT_EQ(book.slots()[s].device, (*input.slots)[s].device);
    EXPECT_EQ(book.slots()[s].index, (*input.slots)[s].index);
  }
  // Every job the state points at is one the input holds.
  std::set<const Job*> held;
  for (const auto& job : input.jobs) held.insert(job.get());
  for (const QueuedJob& q : input.state.queue) EXPECT_TRUE(held.count(q.job));
  for (const RunningJob& r : input.state.running) EXPECT_TRUE(held.count(r.job));
  return render(input.state, input.unrunnable);
}

std::set<std::string> parked_from_scratch(const JobBook& book) {
  std::set<std::string> parked;
  for (const auto& [id, job] : book.jobs()) {
    if (job.record.phase == JobPhase::kQueued && !job.parked.empty()) parked.insert(id);
  }
  return parked;
}

// Random changes in the shapes the planner makes them (it asks classify() first, as
// register_variant does), with ties in arrival and re-created pods.
class RandomBook {
 public:
  explicit RandomBook(std::uint32_t seed) : rng_(seed), book_(DeviceMapping{}, 600) {}

  JobBook& book() { return book_; }
  double now() const { return now_; }
  std::string any_job_id() { return "j" + std::to_string(pick(12)); }

  void step() {
    now_ += pick(3) * 10.0;
    switch (pick(12)) {
      case 0:
        inventory();
        break;
      case 1:
      case 2:
      case 3:
        variant();
        break;
      case 4:
        remove_variant();
        break;
      case 5:
        if (const BookJob* job = any(JobPhase::kQueued)) book_.park(job->record.id, "a reason");
        break;
      case 6:
        if (const BookJob* job = any(JobPhase::kQueued)) (void)book_.remove(job->record.id, now_);
        break;
      case 7:
      case 8:
        start();
        break;
      case 9:
        if (const BookJob* job = any(JobPhase::kRunning)) (void)book_.finish(job->record.id, now_);
        break;
      case 10:
        sample();
        break;
      case 11:
        forget();
        break;
    }
  }

  void restore_some() {
    StoredState stored;
    for (int i = 0; i < 4; ++i) {
      JobRecord record;
      record.row = ++row_;
      record.id = "j" + std::to_string(i);
      record.user = "u" + std::to_string(i % 2);
      record.arrival = 5.0 * (i % 2);
      if (i == 2) record.phase = JobPhase::kDone, record.finish = 20;
      stored.jobs.push_back(record);
      JobVariant variant = make_variant(record.id, i % 2 ? "cpu" : "gpu");
      stored.variants.push_back({record.row, variant});
      if (i == 3) {
        stored.intents.push_back({record.row, record.id, variant.pod, "n0", variant.device, 1});
      }
      stored.profiles.push_back(
          {record.id, variant.device, ProfileSample::Kind::kProfile, 10, 30, 1, record.row});
    }
    book_.restore(stored);
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  JobVariant make_variant(const std::string& job_id, const DeviceType& device) {
    JobVariant v;
    v.job_id = job_id;
    v.user = "u" + std::to_string(pick(3));
    v.device = device;
    v.pod = {job_id + "-" + device, "ns", "uid" + std::to_string(pick(3) == 0 ? ++uid_ : uid_)};
    if (pick(2)) v.iterations = 100 + pick(3) * 50;
    if (pick(2)) v.time_hints[device] = 60.0 * (1 + pick(4));
    if (pick(4) == 0) v.time_hints[device == "gpu" ? "cpu" : "gpu"] = 500;
    return v;
  }

  const BookJob* any(JobPhase phase) {
    std::vector<const BookJob*> found;
    for (const auto& [id, job] : book_.jobs()) {
      if (job.record.phase == phase) found.push_back(&job);
    }
    std::sort(found.begin(), found.end(),
              [](const BookJob* a, const BookJob* b) { return a->record.id < b->record.id; });
    return found.empty() ? nullptr : found[static_cast<std::size_t>(pick(int(found.size())))];
  }

  void inventory() {
    std::vector<NodeInventory> nodes;
    for (int n = 0; n < 4; ++n) {
      if (pick(4) == 0) continue;
      NodeInventory node{"n" + std::to_string(n), {}};
      if (int gpus = pick(4)) node.machines["gpu"] = gpus;
      if (pick(3) != 0) node.machines["cpu"] = 1 + pick(2);
      nodes.push_back(node);
    }
    book_.set_inventory(nodes);
  }

  void variant() {
    JobVariant v = make_variant(any_job_id(), pick(2) ? "gpu" : "cpu");
    switch (book_.classify(v)) {
      case JobBook::Change::kNone:
        break;
      case JobBook::Change::kNewRun: {
        JobRecord record;
        record.row = ++row_;
        record.id = v.job_id;
        record.user = v.user;
        record.arrival = now_ - pick(2) * 10.0;  // ties in arrival, broken by id
        book_.add_run(record, v);
        break;
      }
      case JobBook::Change::kVariant:
        book_.add_variant(v);
        break;
    }
  }

  void remove_variant() {
    const BookJob* job = any(JobPhase::kQueued);
    if (job == nullptr || job->variants.empty()) return;
    auto it = job->variants.begin();
    std::advance(it, pick(int(job->variants.size())));
    const PodIdentity pod = it->second.pod;
    book_.remove_variant(pod.namespace_name, pod.name);
  }

  void start() {
    const BookJob* job = any(JobPhase::kQueued);
    if (job == nullptr || job->variants.empty() || book_.slots().empty()) return;
    auto it = job->variants.begin();
    std::advance(it, pick(int(job->variants.size())));
    const JobVariant variant = it->second;
    const std::string node = book_.slots()[std::size_t(pick(int(book_.slots().size())))].node;
    (void)book_.start(job->record.id, variant, node, pick(int(book_.slots().size()) + 1) - 1, now_);
  }

  void sample() {
    const std::string id = any_job_id();
    const BookJob* job = book_.job(id);
    if (job == nullptr) return;
    ProfileSample s{id,
                    pick(2) ? "gpu" : "cpu",
                    pick(2) ? ProfileSample::Kind::kProfile : ProfileSample::Kind::kProgress,
                    10 + pick(5) * 10,
                    5.0 + pick(5) * 7,
                    now_ - pick(2) * 10.0,
                    job->record.row};
    book_.add_sample(s);
  }

  void forget() {
    const double before = now_ - pick(4) * 20.0;
    std::size_t due = 0;
    for (const auto& [id, job] : book_.jobs()) {
      if (job.record.phase == JobPhase::kDone && job.record.finish < before) ++due;
    }
    const std::size_t size = book_.jobs().size();
    EXPECT_EQ(due, book_.forget_finished(before));
    EXPECT_EQ(size - due, book_.jobs().size());
    for (const auto& [id, job] : book_.jobs()) {
      EXPECT_FALSE(job.record.phase == JobPhase::kDone && job.record.finish < before) << id;
    }
  }

  std::mt19937 rng_;
  JobBook book_;
  double now_ = 100;
  std::int64_t row_ = 0;
  int uid_ = 0;
};

TEST(JobBookTest, KeptSnapshotEqualsOneFromScratchAfterRandomChanges) {
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    RandomBook random(seed);
    if (seed % 3 == 0) random.restore_some();
    for (int step = 0; step < 150; ++step) {
      random.step();
      const JobBook& book = random.book();
      ASSERT_EQ(reference_snapshot(book, random.now(), nullptr),
                kept_snapshot(book, random.now(), nullptr))
          << "seed " << seed << " step " << step;
      const std::string only = random.any_job_id();
      ASSERT_EQ(reference_snapshot(book, random.now() + 7, &only),
                kept_snapshot(book, random.now() + 7, &only))
          << "seed " << seed << " step " << step << " only " << only;
      ASSERT_EQ(parked_from_scratch(book), book.parked_jobs()) << "seed " << seed;
    }
  }
}

TEST(JobBookTest, ASnapshotKeepsTheJobsItWasTakenWith) {
  JobBook book(DeviceMapping{}, 600);
  book.set_inventory({{"n0", {{"gpu", 1}}}});
  JobVariant v;
  v.job_id = "a";
  v.user = "u";
  v.device = "gpu";
  v.pod = {"a-gpu", "ns", "1"};
  v.time_hints["gpu"] = 100;
  v.iterations = 100;
  JobRecord record;
  record.id = "a";
  record.user = "u";
  record.arrival = 10;
  book.add_run(record, v);
  PlanInput before = book.snapshot(20);
  ASSERT_EQ(1u, before.state.queue.size());
  const std::string taken = render(before.state, before.unrunnable);
  EXPECT_DOUBLE_EQ(100, before.state.queue[0].job->time.at("gpu"));

  // A profile changes the estimate: later snapshots see it, the one taken does not change.
  book.add_sample({"a", "gpu", ProfileSample::Kind::kProfile, 10, 40, 15, 0});
  PlanInput after = book.snapshot(20);
  EXPECT_NE(before.state.queue[0].job->time.at("gpu"), after.state.queue[0].job->time.at("gpu"));
  EXPECT_EQ(taken, render(before.state, before.unrunnable));
  // Even once the job has left the book.
  book.remove_variant("ns", "a-gpu");
  EXPECT_EQ(nullptr, book.job("a"));
  EXPECT_EQ(taken, render(before.state, before.unrunnable));
}

}  // namespace
}  // namespace allox::extender
