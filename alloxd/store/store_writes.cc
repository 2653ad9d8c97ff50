// The store's writes of a job's life: its arrival and variants, its start, its end, its profile
// samples, and the bind intents those paths clear. One transaction each.
#include "alloxd/store/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "alloxd/store/statement.h"

namespace allox::extender {
namespace {

// An UPDATE that must touch exactly one run.
Status run_on_one_row(sqlite3* db, Statement& statement, const std::string& what,
                      std::int64_t row) {
  if (auto s = statement.run(what); !s) return s;
  if (sqlite3_changes(db) != 1) {
    return Error{"store: " + what + ": no job run with row " + std::to_string(row)};
  }
  return OkStatus();
}

// Every path that ends a bind (the pod started, the run ended, the intent was dropped) clears it.
Status clear_bind_intent(StatementCache& db, std::int64_t job_row, const std::string& what) {
  Statement intent(db, "DELETE FROM bind_intents WHERE job_row = ?");
  intent.bind(1, job_row);
  return intent.run(what);
}

Status insert_variant(StatementCache& db, std::int64_t job_row, const JobVariant& variant) {
  Statement s(db,
              "INSERT OR REPLACE INTO variants (pod_namespace, pod_name, pod_uid, job_row, "
              "job_id, user, device, iterations, time_hints, units, gang, seq) VALUES (?1, ?2, ?3, "
              "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
              "(SELECT coalesce(max(seq), 0) + 1 FROM variants WHERE job_row = ?4))");
  s.bind_all(variant.pod.namespace_name, variant.pod.name, variant.pod.uid, job_row, variant.job_id,
             variant.user, variant.device, variant.iterations,
             nlohmann::json(variant.time_hints).dump(), static_cast<std::int64_t>(variant.units),
             static_cast<std::int64_t>(variant.gang));
  return s.run("record variant");
}

}  // namespace

Expected<std::int64_t> Store::record_arrival(const JobRecord& job, const JobVariant& first,
                                             Durability durability) {
  std::lock_guard lock(mu_);
  std::int64_t row = 0;
  Status status = transaction(
      [&]() -> Status {
        // The gang's size with the run: a rolled-back gang's run outlives its members' rows
        // (forget_member), and is read back as a gang waiting for them.
        Statement s(*statements_, "INSERT INTO jobs (id, user, arrival, gang) VALUES (?, ?, ?, ?)");
        s.bind_all(job.id, job.user, job.arrival,
                   static_cast<std::int64_t>(std::max(job.gang, first.gang)));
        if (auto r = s.run("record arrival of " + job.id); !r) return r;
        row = sqlite3_last_insert_rowid(db_);
        return insert_variant(*statements_, row, first);
      },
      Mode::kWrite, durability);
  if (!status) return status.error();
  return row;
}

Status Store::record_variant(std::int64_t job_row, const JobVariant& variant,
                             Durability durability) {
  std::lock_guard lock(mu_);
  return transaction([&] { return insert_variant(*statements_, job_row, variant); }, Mode::kWrite,
                     durability);
}

Status Store::drop_bind_intent(std::int64_t job_row) {
  std::lock_guard lock(mu_);
  return transaction([&] { return clear_bind_intent(*statements_, job_row, "drop bind intent"); });
}

namespace {

// The variant row of `pod` in run `job_row`, deleted; `what` names the write in an error.
Status delete_variant_row(StatementCache& statements, const PodIdentity& pod, std::int64_t job_row,
                          const char* what) {
  Statement variant(statements,
                    "DELETE FROM variants WHERE pod_namespace = ? AND pod_name = ? AND job_row = ?");
  variant.bind_all(pod.namespace_name, pod.name, job_row);
  return variant.run(what);
}

}  // namespace

Status Store::forget_member(const PodIdentity& pod, std::int64_t job_row, Durability durability) {
  std::lock_guard lock(mu_);
  return transaction(
      [&]() -> Status {
        return delete_variant_row(*statements_, pod, job_row, "forget gang member");
      },
      Mode::kWrite, durability);
}

Status Store::forget_variant(const PodIdentity& pod, std::int64_t job_row, Durability durability) {
  std::lock_guard lock(mu_);
  return transaction(
      [&]() -> Status {
        if (auto s = delete_variant_row(*statements_, pod, job_row, "forget variant"); !s) return s;
        // A queued run left without variants goes with its samples (no orphan rows).
        for (const char* sql :
             {"DELETE FROM profiles WHERE job_row = ?1 AND EXISTS (SELECT 1 FROM jobs WHERE row = "
              "?1 "
              "AND phase = 'queued') AND NOT EXISTS (SELECT 1 FROM variants WHERE job_row = ?1)",
              "DELETE FROM jobs WHERE row = ?1 AND phase = 'queued' AND NOT EXISTS "
              "(SELECT 1 FROM variants WHERE job_row = ?1)"}) {
          Statement statement(*statements_, sql);
          statement.bind(1, job_row);
          if (auto s = statement.run("forget run"); !s) return s;
        }
        return OkStatus();
      },
      Mode::kWrite, durability);
}

Status Store::record_start(const JobRecord& job, Durability durability) {
  std::lock_guard lock(mu_);
  return transaction(
      [&]() -> Status {
        Statement update(*statements_,
                         "UPDATE jobs SET phase = 'running', pod_namespace = ?, pod_name = ?, "
                         "pod_uid = ?, node = ?, device = ?, machine = ?, units = ?, gang = ?, "
                         "start = ? WHERE row = ?");
        update.bind_all(job.pod_namespace, job.pod_name, job.pod_uid, job.node, job.device,
                        static_cast<std::int64_t>(job.machine),
                        static_cast<std::int64_t>(job.units), static_cast<std::int64_t>(job.gang),
                        job.start, job.row);
        if (auto s = run_on_one_row(db_, update, "record start of " + job.id, job.row); !s)
          return s;
        Statement usage(*statements_,
                        "INSERT OR REPLACE INTO usage (job_row, job_id, user, device, node, start, "
                        "end) VALUES (?, ?, ?, ?, ?, ?, NULL)");
        usage.bind_all(job.row, job.id, job.user, job.device, job.node, job.start);
        if (auto s = usage.run("record usage"); !s) return s;
        return clear_bind_intent(*statements_, job.row, "clear bind intent");
      },
      Mode::kWrite, durability);
}

Status Store::record_gang_start(const JobRecord& job,
                                const std::map<std::string, std::string>& member_nodes,
                                Durability durability) {
  // One transaction: record_start joins the batch's (Store::batch), as the member rows do.
  return batch(
      [&]() -> Status {
        std::lock_guard lock(mu_);
        if (auto s = record_start(job, durability); !s) return s;
        for (const auto& [pod, node] : member_nodes) {
          const auto slash = pod.find('/');
          Statement member(*statements_,
                           "UPDATE variants SET node = ? WHERE pod_namespace = ? AND pod_name = ? "
                           "AND job_row = ?");
          member.bind_all(node, pod.substr(0, slash), pod.substr(slash + 1), job.row);
          if (auto s = member.run("record member node of " + job.id); !s) return s;
        }
        return OkStatus();
      },
      durability);
}

Status Store::record_finish(std::int64_t job_row, double finish, Durability durability) {
  return end_run(job_row, "done", finish, durability);
}

Status Store::record_requeue(std::int64_t job_row, const PodIdentity& ran, double at,
                             Durability durability) {
  std::lock_guard lock(mu_);
  return transaction(
      [&]() -> Status {
        Statement variant(
            *statements_,
            "DELETE FROM variants WHERE pod_namespace = ? AND pod_name = ? AND job_row = ?");
        variant.bind_all(ran.namespace_name, ran.name, job_row);
        if (auto s = variant.run("forget the failed variant"); !s) return s;
        Statement update(*statements_,
                         "UPDATE jobs SET phase = 'queued', node = '' WHERE row = ? AND "
                         "phase = 'running'");
        update.bind_all(job_row);
        if (auto s = run_on_one_row(db_, update, "record requeue", job_row); !s) return s;
        Statement usage(*statements_, "UPDATE usage SET end = ? WHERE job_row = ?");
        usage.bind_all(at, job_row);
        return usage.run("close usage");
      },
      Mode::kWrite, durability);
}

Status Store::record_removal(std::int64_t job_row, double at) {
  return end_run(job_row, "removed", at, Durability::kSynced);
}

Status Store::end_run(std::int64_t job_row, const char* phase, double at, Durability durability) {
  std::lock_guard lock(mu_);
  const std::string what = std::string("record ") + phase;
  return transaction(
      [&]() -> Status {
        Statement update(*statements_, "UPDATE jobs SET phase = ?, finish = ? WHERE row = ?");
        update.bind_all(std::string(phase), at, job_row);
        if (auto s = run_on_one_row(db_, update, what, job_row); !s) return s;
        // A finished run has a usage row and no intent, a removed (queued) one the other way round;
        // either statement touches no row where there is nothing to end.
        Statement usage(*statements_, "UPDATE usage SET end = ? WHERE job_row = ?");
        usage.bind_all(at, job_row);
        if (auto s = usage.run("close usage"); !s) return s;
        return clear_bind_intent(*statements_, job_row, "clear bind intent");
      },
      Mode::kWrite, durability);
}

Status Store::record_profile(const ProfileSample& sample) {
  std::lock_guard lock(mu_);
  return transaction([&]() -> Status {
    Statement s(*statements_,
                "INSERT INTO profiles (job_row, job_id, device, kind, iterations, seconds, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)");
    s.bind_all(sample.job_row, sample.job_id, sample.device,
               std::string(sample.kind == ProfileSample::Kind::kProfile ? "profile" : "progress"),
               sample.iterations, sample.seconds, sample.at);
    return s.run("record profile");
  });
}

}  // namespace allox::extender
