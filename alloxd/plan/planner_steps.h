// Inside Planner::apply (planner.h): one change on its way through a group commit, and the three
// steps each kind of change takes. Private to planner_apply.cc and planner_steps.cc.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "alloxd/plan/planner.h"

namespace allox::extender {

struct Planner::Step {
  const BookChange* change = nullptr;
  Applied* outcome = nullptr;
  // After the check: nothing more to do (its outcome is set), a store write and a book change
  // to make, a book change only (nothing to write), or wait for the next group (another change
  // of this group changes its job).
  enum class Then { kDone, kWrite, kBook, kNextGroup };
  Then then = Then::kDone;
  Durability durability = Durability::kWritten;  // of its write
  bool replan = false;                           // set by check or book: the next plan may differ

  // What the check found, for the write and the book (each kind uses its own few).
  std::string job_id = {};
  std::int64_t row = 0;
  JobBook::Change variant_change = JobBook::Change::kNone;  // RegisterVariant
  JobRecord record = {};          // RegisterVariant's new run, Start's and StartGang's run
  const Step* run = nullptr;      // RegisterVariant: the step of this group that writes its run
  const Step* same_as = nullptr;  // Complete: the first Complete of the job in this group
  std::vector<PodIdentity> pods =
      {};                     // Admit: siblings; Requeue: other members; RollBackGang: members
  PodIdentity ran = {};       // Requeue: the pod that ran
  std::string node = {};      // Complete
  DeviceType device = {};     // Complete
  double at = 0;              // Complete, RemoveJob: the time recorded, never before start/arrival
  ProfileSample sample = {};  // AddProfile
  PlannedStart start = {};    // AdoptGang: the admission
};

// What a group's earlier changes did, for the later ones' checks.
struct Planner::GroupView {
  double at = 0;  // the group's time: arrivals, finishes, removals, samples
  // Job id -> the step that registers its new run (a later variant of it joins that run).
  std::unordered_map<std::string, const Step*> new_runs;
  // Job id -> whether only registrations changed it so far in this group.
  std::unordered_map<std::string, bool> touched;
  // Job id -> the first Complete of it in this group (a repeat is answered as it).
  std::unordered_map<std::string, const Step*> completing;
  // An admission changed the book in the chunk being applied: the planning input changed
  // outside the book, so its version moves (once per chunk).
  bool admitted = false;
};

// The steps of each kind, with access to the planner's state. check: under write_mu_, reading the
// book (a start changes it); write: inside the group's store transaction; book: under book_mu_
// (exclusive).
struct Planner::Steps {
  Planner& p;
  GroupView& view;

  void check(Step& step);
  Status write(Step& step);
  void book(Step& step);

 private:
  // Whether `job_id` waits for the next group (another change of this one changes it); marks it
  // changed otherwise. `registering`: a registration, which may follow other registrations.
  bool claim(Step& step, const std::string& job_id, bool registering = false);
  // The book's job `job_id` (the caller holds the book's lock), or null with the step's outcome
  // saying that allox does not know it.
  const BookJob* known_job(Step& step, const std::string& job_id);

  void check_change(Step& step, const book::RegisterVariant& c);
  void check_change(Step& step, const book::RemoveVariant& c);
  void check_change(Step& step, const book::Admit& c);
  void check_change(Step& step, const book::RecordBindIntent& c);
  void check_change(Step& step, const book::DropBindIntent& c);
  void check_change(Step& step, const book::Start& c);
  void check_change(Step& step, const book::StartGang& c);
  void check_change(Step& step, const book::Complete& c);
  void check_change(Step& step, const book::Requeue& c);
  void check_change(Step& step, const book::RemoveJob& c);
  void check_change(Step& step, const book::AddProfile& c);
  void check_change(Step& step, const book::RollBackGang& c);
  void check_change(Step& step, const book::SetInventory& c);
  void check_change(Step& step, const book::Park& c);
  void check_change(Step& step, const book::ForgetFinished& c);
  void check_change(Step& step, const book::EndMember& c);
  void check_change(Step& step, const book::AdoptGang& c);

  Status write_change(Step& step, const book::RegisterVariant& c);
  Status write_change(Step& step, const book::RemoveVariant& c);
  Status write_change(Step& step, const book::Admit& c);
  Status write_change(Step& step, const book::RecordBindIntent& c);
  Status write_change(Step& step, const book::DropBindIntent& c);
  Status write_change(Step& step, const book::Start& c);
  Status write_change(Step& step, const book::StartGang& c);
  Status write_change(Step& step, const book::Complete& c);
  Status write_change(Step& step, const book::Requeue& c);
  Status write_change(Step& step, const book::RemoveJob& c);
  Status write_change(Step& step, const book::AddProfile& c);
  Status write_change(Step& step, const book::RollBackGang& c);
  Status write_change(Step& step, const book::SetInventory& c);
  Status write_change(Step& step, const book::Park& c);
  Status write_change(Step& step, const book::ForgetFinished& c);
  Status write_change(Step& step, const book::EndMember& c);
  Status write_change(Step& step, const book::AdoptGang& c);

  void book_change(Step& step, const book::RegisterVariant& c);
  void book_change(Step& step, const book::RemoveVariant& c);
  void book_change(Step& step, const book::Admit& c);
  void book_change(Step& step, const book::RecordBindIntent& c);
  void book_change(Step& step, const book::DropBindIntent& c);
  void book_change(Step& step, const book::Start& c);
  void book_change(Step& step, const book::StartGang& c);
  void book_change(Step& step, const book::Complete& c);
  void book_change(Step& step, const book::Requeue& c);
  void book_change(Step& step, const book::RemoveJob& c);
  void book_change(Step& step, const book::AddProfile& c);
  void book_change(Step& step, const book::RollBackGang& c);
  void book_change(Step& step, const book::SetInventory& c);
  void book_change(Step& step, const book::Park& c);
  void book_change(Step& step, const book::ForgetFinished& c);
  void book_change(Step& step, const book::EndMember& c);
  void book_change(Step& step, const book::AdoptGang& c);
};

}  // namespace allox::extender
