// What the store reads back: the state alloxd restarts from (load), usage for the reports; and
// the finished runs it prunes from history.
#include "alloxd/store/store.h"

#include <nlohmann/json.hpp>
#include <string>

#include "alloxd/store/statement.h"

namespace allox::extender {
namespace {

// Runs load() brings back (? = finished_since), and runs prune_history() deletes
// (? = finished_before).
#define ALLOX_STORE_LOADED_RUNS "(phase IN ('queued', 'running', 'removed') OR finish >= ?1)"
#define ALLOX_STORE_PRUNED_RUNS "(phase IN ('done', 'removed') AND finish < ?1)"

JobPhase phase_from(const std::string& name) {
  if (name == "running") return JobPhase::kRunning;
  if (name == "done") return JobPhase::kDone;
  if (name == "removed") return JobPhase::kRemoved;
  return JobPhase::kQueued;
}

}  // namespace

Expected<StoredState> Store::load(double finished_since) {
  std::lock_guard lock(mu_);
  StoredState state;
  // One read transaction: the four reads see one consistent state.
  Status status = transaction(
      [&]() -> Status {
        Statement jobs(db_,
                       "SELECT row, id, user, arrival, phase, pod_namespace, pod_name, pod_uid, "
                       "node, device, machine, units, start, finish, gang FROM jobs "
                       "WHERE " ALLOX_STORE_LOADED_RUNS " ORDER BY row");
        jobs.bind(1, finished_since);
        while (jobs.next()) {
          JobRecord job;
          std::string phase;
          jobs.columns(job.row, job.id, job.user, job.arrival, phase, job.pod_namespace,
                       job.pod_name, job.pod_uid, job.node, job.device, job.machine, job.units,
                       job.start, job.finish, job.gang);
          job.phase = phase_from(phase);
          state.jobs.push_back(std::move(job));
        }
        if (auto s = jobs.status("read jobs"); !s) return s;

        Statement variants(
            db_,
            "SELECT pod_namespace, pod_name, pod_uid, job_row, job_id, user, device, "
            "iterations, time_hints, units, gang, node FROM variants "
            "WHERE job_row IN (SELECT row FROM jobs WHERE " ALLOX_STORE_LOADED_RUNS
            ") ORDER BY job_row, seq");
        variants.bind(1, finished_since);
        while (variants.next()) {
          StoredVariant stored;
          JobVariant& v = stored.variant;
          std::string hints_text;
          variants.columns(v.pod.namespace_name, v.pod.name, v.pod.uid, stored.job_row, v.job_id,
                           v.user, v.device, v.iterations, hints_text, v.units, v.gang,
                           stored.node);
          auto hints = nlohmann::json::parse(hints_text, nullptr, false);
          if (hints.is_object()) {
            for (const auto& [device, seconds] : hints.items()) {
              if (seconds.is_number()) v.time_hints[device] = seconds.get<double>();
            }
          }
          state.variants.push_back(std::move(stored));
        }
        if (auto s = variants.status("read variants"); !s) return s;

        Statement profiles(
            db_,
            "SELECT job_row, job_id, device, kind, iterations, seconds, at "
            "FROM profiles WHERE job_row IN (SELECT row FROM jobs WHERE " ALLOX_STORE_LOADED_RUNS
            ") "
            "ORDER BY seq");
        profiles.bind(1, finished_since);
        while (profiles.next()) {
          ProfileSample p;
          std::string kind;
          profiles.columns(p.job_row, p.job_id, p.device, kind, p.iterations, p.seconds, p.at);
          p.kind =
              kind == "progress" ? ProfileSample::Kind::kProgress : ProfileSample::Kind::kProfile;
          state.profiles.push_back(std::move(p));
        }
        if (auto s = profiles.status("read profiles"); !s) return s;

        Statement intents(db_,
                          "SELECT job_row, job_id, pod_namespace, pod_name, pod_uid, node, device, "
                          "at FROM bind_intents ORDER BY job_row");
        while (intents.next()) {
          BindIntent intent;
          intents.columns(intent.job_row, intent.job_id, intent.pod.namespace_name, intent.pod.name,
                          intent.pod.uid, intent.node, intent.device, intent.at);
          state.intents.push_back(std::move(intent));
        }
        return intents.status("read bind intents");
      },
      Mode::kRead);
  if (!status) return status.error();
  return state;
}

Expected<int> Store::prune_history(double finished_before) {
  std::lock_guard lock(mu_);
  int pruned = 0;
  Status status = transaction([&]() -> Status {
    Statement count(db_, "SELECT count(*) FROM jobs WHERE " ALLOX_STORE_PRUNED_RUNS);
    count.bind(1, finished_before);
    if (!count.next()) return count.status("count runs to prune");
    pruned = static_cast<int>(count.integer(0));
    for (const char* sql :
         {"DELETE FROM variants WHERE job_row IN (SELECT row FROM jobs "
          "WHERE " ALLOX_STORE_PRUNED_RUNS ")",
          "DELETE FROM profiles WHERE job_row IN (SELECT row FROM jobs "
          "WHERE " ALLOX_STORE_PRUNED_RUNS ")",
          "DELETE FROM usage WHERE job_row IN (SELECT row FROM jobs WHERE " ALLOX_STORE_PRUNED_RUNS
          ")",
          "DELETE FROM jobs WHERE " ALLOX_STORE_PRUNED_RUNS}) {
      Statement s(db_, sql);
      s.bind(1, finished_before);
      if (auto r = s.run("prune history"); !r) return r;
    }
    return OkStatus();
  });
  if (!status) return status.error();
  return pruned;
}

Expected<std::vector<UsageRecord>> Store::usage_since(double since) {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "SELECT job_id, user, device, node, start, end FROM usage "
              "WHERE end IS NULL OR end >= ? ORDER BY start");
  s.bind(1, since);
  std::vector<UsageRecord> out;
  while (s.next()) {
    UsageRecord u{s.text(0), s.text(1), s.text(2), s.text(3), s.real(4), std::nullopt};
    if (!s.is_null(5)) u.end = s.real(5);
    out.push_back(std::move(u));
  }
  if (auto status = s.status("read usage"); !status) return status.error();
  return out;
}

}  // namespace allox::extender
#undef ALLOX_STORE_LOADED_RUNS
#undef ALLOX_STORE_PRUNED_RUNS
