// A change to the job book, as Planner::apply takes it: one kind per writer of the book, in the
// problem's words (a pod registered, a job admitted, bound, finished, a node added...). The state
// each kind moves a run along is drawn in alloxd/store/job_state.h.
//
// Each kind says how durable it must be when apply returns (store.h): kSynced on disk, kWritten
// in the OS. Kinds whose durability is fixed (an admission's dropped siblings are written, an
// admin's removal and a bind intent synced) carry none. A group of changes committed together
// is as durable as its strictest change.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "alloxd/config.h"
#include "alloxd/model/pod.h"
#include "alloxd/plan/plan.h"
#include "alloxd/store/job_types.h"
#include "alloxd/store/store.h"

namespace allox::extender {

// A profiling or progress report (POST /v1/profiles).
struct ProfileReport {
  std::string job_id;
  DeviceType device;
  ProfileSample::Kind kind = ProfileSample::Kind::kProfile;
  std::int64_t iterations = 0;
  double seconds = 0;
};

namespace book {

// A pod is (or is again, changed) a variant of its job: a new run when its job has none queued
// or running. Nothing is written when the book already has it as it is.
struct RegisterVariant {
  JobVariant variant;
  Durability durability = Durability::kSynced;
};
// The pod was deleted: it is no longer a variant of its queued job (a run keeps its pods).
// Written: the API server is where the deletion lives.
struct RemoveVariant {
  PodIdentity pod;
};
// The controller releases `pod_key` ("namespace/name") to start `job_id` at `start`: the job's
// other variants leave (written), and the plans hold that start until the bind or the hold lapses.
struct Admit {
  std::string job_id;
  std::string pod_key;
  PlannedStart start;
};
// Before the API server is asked to bind (synced); the book is not changed.
struct RecordBindIntent {
  BindIntent intent;
};
// The API server refused the bind, or start-up found the pod unbound (synced): the intent's row
// goes, and the book's, where one was restored.
struct DropBindIntent {
  std::int64_t job_row = 0;
  std::string job_id;
};
// `variant` was bound to `node` (on `preferred_slot` when it is free there): the run starts.
struct Start {
  JobVariant variant;
  std::string node;
  int preferred_slot = -1;
  Durability durability = Durability::kSynced;
};
// Every member of the gang `job_id` was bound (member pod key -> node): the gang starts.
struct StartGang {
  std::string job_id;
  std::map<std::string, std::string> member_nodes;
  DeviceType device;
  Durability durability = Durability::kSynced;
};
// The running job finished.
struct Complete {
  std::string job_id;
  Durability durability = Durability::kSynced;
};
// The running job's pod failed and its batch/v1 Job runs it again: queued again, the same run.
struct Requeue {
  std::string job_id;
  Durability durability = Durability::kSynced;
};
// An admin removes the queued job for good (synced).
struct RemoveJob {
  std::string job_id;
};
// A profile or progress sample of a job (synced).
struct AddProfile {
  ProfileReport report;
};
// A released gang did not bind whole: its members leave (written), it waits again with `note`.
struct RollBackGang {
  std::string job_id;
  std::string note;
};

// The changes below are the book's alone: they write no row, so they never wait for a
// transaction, and take the same lock order as every other change.
//
// The cluster's nodes and what each offers, as the node watch sees them (whole, every time).
struct SetInventory {
  std::vector<NodeInventory> nodes;
};
// The policy cannot take the queued job `job_id` on its own: it waits, out of the rounds, until
// its pods change (RegisterVariant), with `reason` for whoever asks why.
struct Park {
  std::string job_id;
  std::string reason;
};
// Runs finished before `before` leave the book (the retention sweep; their rows stay).
struct ForgetFinished {
  double before = 0;
};
// A member of the running gang `job_id` ended as the watch saw it (Planner::gang_member_ended):
// `failed` ends the gang (its members still running are handed to the controller to delete);
// `retry`: its batch/v1 Job makes it again, so the gang queues again once every member ended.
struct EndMember {
  std::string job_id;
  std::string pod_key;
  bool failed = false;
  bool retry = false;
};
// A queued gang found released with no admission is admitted again on the nodes its members are
// pinned to (pod key -> node), when they still hold it (Planner::adopt_gang).
struct AdoptGang {
  std::string job_id;
  std::map<std::string, std::string> member_nodes;
};

}  // namespace book

using BookChange =
    std::variant<book::RegisterVariant, book::RemoveVariant, book::Admit, book::RecordBindIntent,
                 book::DropBindIntent, book::Start, book::StartGang, book::Complete, book::Requeue,
                 book::RemoveJob, book::AddProfile, book::RollBackGang, book::SetInventory,
                 book::Park, book::ForgetFinished, book::EndMember, book::AdoptGang>;

}  // namespace allox::extender
