#include "alloxd/verbs/verbs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace allox::extender {
namespace {

// The answer for a job no plan has yet.
constexpr const char* kUnplanned = "queued: waiting for allox's next scheduling round";

std::string whole_seconds(double seconds) {
  return std::to_string(static_cast<long long>(std::llround(std::max(0.0, seconds)))) + "s";
}

// Whether a "queued" answer for `variant` from `plan` may only mean that alloxd is behind the
// cluster, and what would settle it.
struct Behind {
  std::uint64_t version = 0;           // a plan of this book version settles it; 0: not behind
  std::vector<std::string_view> busy;  // offered nodes of the variant's device the book shows full
};

// At most one capacity lookup per offered node, and one in all when the job starts now on its
// planned node. `offered` outlives the call (busy views it); `skip(node)`: a node left out
// (vain_wait_cooldown). `new_job`: the book does not have the variant's job yet (nor does any
// plan): only the offered nodes can say that alloxd is behind.
template <typename Skip>
Behind behind(const JobBook& book, const Plan& plan, const JobVariant& variant, bool new_job,
              const NodeNameList& offered, const Skip& skip, std::uint64_t freed_version) {
  Behind out;
  bool starts = false;
  if (!new_job) {
    const BookJob* job = book.job(variant.job_id);
    if (job == nullptr || job->record.phase != JobPhase::kQueued || job->intent ||
        !job->parked.empty() ||
        !job->variants.count(variant.pod.namespace_name + "/" + variant.pod.name)) {
      return out;  // the answer does not depend on the plan's age
    }
    auto start = plan.starts.find(variant.job_id);
    if (start != plan.starts.end() && start->second.device != variant.device) {
      return out;  // another variant of it starts
    }
    starts = start != plan.starts.end();
    if (starts) {
      // The usual case: it starts now on its planned node, offered with a free machine.
      const std::string& planned = start->second.node;
      if (!skip(planned) && offered.contains(planned) &&
          book.capacity(planned, variant.device).free > 0) {
        return out;
      }
    }
  }
  for (std::string_view node : offered) {
    if (skip(node)) continue;
    NodeCapacity capacity = book.capacity(node, variant.device);
    if (starts && capacity.free > 0) return Behind{};  // it starts here now
    if (capacity.total > 0 && capacity.free == 0) out.busy.push_back(node);
  }
  // kube-scheduler's own resource filter passed these nodes: it has seen a machine freed there
  // that the watch has not brought in yet. Any later book, planned, is worth a look.
  if (!out.busy.empty()) {
    out.version = book.version() + 1;
  } else if (plan.version < freed_version) {
    out.version = freed_version;  // a machine was freed after this plan was made
  }
  return out;
}

}  // namespace

ExtenderVerbs::ExtenderVerbs(Planner& planner, ClusterApi* api, Metrics& metrics,
                             VerbOptions options)
    : planner_(planner), api_(api), metrics_(metrics), options_(std::move(options)) {}

bool ExtenderVerbs::ours(const nlohmann::json& pod) const {
  const std::string& name = planner_.config().scheduler_name;
  if (name.empty()) return true;
  const nlohmann::json* spec = pod.is_object() ? find_key(pod, "spec") : nullptr;
  const nlohmann::json* scheduler =
      spec != nullptr && spec->is_object() ? find_key(*spec, "schedulerName") : nullptr;
  return scheduler != nullptr && scheduler->is_string() && *scheduler == name;
}

FilterResult ExtenderVerbs::filter(const ExtenderArgs& args) {
  FilterResult result;
  result.node_names.emplace();  // nodeCacheCapable: always a list, never null
  if (args.node_objects) result.node_objects.emplace();
  const NodeNameList& candidates = args.candidates();
  if (!ours(args.pod)) {  // another scheduler's pod: every node kept, nothing recorded
    *result.node_names = candidates;
    if (args.node_objects) *result.node_objects = *args.node_objects;
    return result;
  }
  const DeviceMapping& devices = planner_.config().devices;
  auto variant = read_job_variant(args.pod, devices, planner_.config().tenancy);
  if (!variant) {
    auto unreadable = result.failed_and_unresolvable_nodes.reason("allox cannot read this pod: " +
                                                                  variant.message());
    for (std::string_view node : candidates)
      result.failed_and_unresolvable_nodes.add(node, unreadable);
    return result;
  }
  if (!planner_.ready()) {
    result.error = "allox is not ready: its node inventory is not loaded yet";
    return result;
  }
  std::shared_ptr<const Plan> plan = planner_.latest_plan();
  // The usual pod: the watch registered it as it is, and no offered node says alloxd is behind.
  // It is answered under one shared lock of the book: each lock a /filter takes may wait for a
  // writer, which may be a background thread the busy cores give no time to while it holds it.
  {
    const Cooling skip = options_.watch_wait.count() > 0 ? cooling(variant->device) : Cooling{};
    const double now = planner_.now();
    const bool answered = planner_.read_registered(*variant, [&](const JobBook& book) {
      if (options_.watch_wait.count() > 0 && behind(book, *plan, *variant, /*new_job=*/false,
                                                    candidates, skip, planner_.freed_version())
                                                     .version != 0) {
        return false;
      }
      answer(book, *plan, *variant, args, /*unregistered=*/false, now, result);
      return true;
    });
    if (answered) return result;
  }
  // A pod of a job the book does not have, on the nudge path, is answered as the watch's
  // registration would have it answered (VerbOptions::nudges says why nothing is written):
  // unless an offered node says alloxd is behind the cluster, and the plan that settles that is
  // worth the wait (wait_for_watch).
  auto is_new = [&](const JobBook& book) { return book.job(variant->job_id) == nullptr; };
  bool unregistered = options_.nudges && planner_.read(is_new);
  if (unregistered && options_.watch_wait.count() > 0) {
    const Cooling skip = cooling(variant->device);
    unregistered = planner_.read([&](const JobBook& book) {
      return is_new(book) && behind(book, *plan, *variant, /*new_job=*/true, candidates, skip,
                                    planner_.freed_version())
                                     .version == 0;
    });
  }
  if (!unregistered) {
    // A pod the watch has not delivered yet (VerbOptions::nudges says why this is safe).
    auto needed = planner_.register_variant(
        *variant, options_.nudges ? Durability::kWritten : Durability::kSynced);
    if (!needed) {
      result.error = needed.message();
      return result;
    }
    plan = planner_.latest_plan();
    if (!options_.nudges && plan->version < *needed) {
      if (options_.on_first_plan_wait) options_.on_first_plan_wait();
      plan = planner_.wait_for_plan(*needed,
                                    std::chrono::steady_clock::now() + options_.first_plan_wait);
    }
    plan = wait_for_watch(*variant, args, std::move(plan));
  }
  const double now = planner_.now();
  planner_.read(
      [&](const JobBook& book) { answer(book, *plan, *variant, args, unregistered, now, result); });
  return result;
}

void ExtenderVerbs::answer(const JobBook& book, const Plan& plan, const JobVariant& variant,
                           const ExtenderArgs& args, bool unregistered, double now,
                           FilterResult& result) const {
  const DeviceMapping& devices = planner_.config().devices;
  const NodeNameList& candidates = args.candidates();
  // unregistered: the book may have the job by now (the watch delivered it), but the plan
  // was taken before the filter looked: it is answered as a job no plan has yet.
  const BookJob* job = unregistered ? nullptr : book.job(variant.job_id);
  const std::string& id = variant.job_id;
  const std::string resource = devices.resource_for(variant.device);

  // Why no node can take this variant, when that holds for every node.
  std::string never;
  const std::string key = variant.pod.namespace_name + "/" + variant.pod.name;
  if (unregistered) {
    // A new job: queued once the watch registers it.
  } else if (job == nullptr) {
    never = "job " + id + " is no longer queued (its pods were deleted)";
  } else if (job->record.phase == JobPhase::kQueued && !job->variants.count(key)) {
    never = "job " + id + " runs as variant " +
            (job->variants.empty() ? std::string("(none)") : job->variants.begin()->first) +
            "; this pod is not used";
  } else if (job->record.phase == JobPhase::kRunning) {
    never = "job " + id + " already runs as pod " + job->record.pod_namespace + "/" +
            job->record.pod_name + " on " + job->record.node;
  } else if (job->record.phase == JobPhase::kDone) {
    never = "job " + id + " has finished";
  } else if (job->record.phase == JobPhase::kRemoved) {
    never = "job " + id + " was removed by an admin";
  } else if (!job->parked.empty()) {
    never = "allox cannot schedule job " + id + ": " + job->parked +
            " (fix the pod's allox.io annotations, or DELETE /v1/jobs/" + id + ")";
  }
  std::string wait_reason;
  const PlannedStart* start = nullptr;
  if (unregistered) {
    if (!plan.error.empty()) {
      result.error = "allox's scheduling round failed: " + plan.error;
      return;
    }
    wait_reason = kUnplanned;
  } else if (job != nullptr && job->intent) {
    wait_reason = "job " + id + ": a bind to " + job->intent->node +
                  " from before alloxd restarted is being confirmed with the API server";
  } else if (auto it = plan.starts.find(id); it != plan.starts.end()) {
    start = &it->second;
    if (start->device != variant.device) {
      wait_reason = "job " + id + " starts on " + start->device + " (another variant); this " +
                    variant.device + " variant is not used";
      start = nullptr;
    }
  } else if (auto w = plan.waiting.find(id); w != plan.waiting.end()) {
    wait_reason = "queued: position " + std::to_string(w->second.position) + " of " +
                  std::to_string(w->second.queue_length);
    if (w->second.estimated_start) {
      wait_reason += ", est. start in " + whole_seconds(*w->second.estimated_start - now);
    }
  } else if (!plan.error.empty() && never.empty()) {
    result.error = "allox's scheduling round failed: " + plan.error;
    return;
  } else {
    wait_reason = kUnplanned;
  }

  // The job starts now on the planned node, or, when kube-scheduler did not offer it or it is
  // full, on any offered node with a free machine of the planned device (which is the
  // variant's: a start on another device left `start` null). Only those nodes are answered:
  // kube-scheduler takes NodeNames as its new feasible list and reads the failed maps only to
  // explain a pod that fits nowhere (findNodesThatPassExtenders), so reasons for the other
  // 4,999 nodes would be rendered and parsed for nobody.
  auto keep = [&](std::size_t i) {
    result.node_names->push_back(candidates[i]);
    if (args.node_objects) result.node_objects->push_back((*args.node_objects)[i]);
  };
  if (start != nullptr && never.empty()) {
    // The usual case costs one scan of the names and one capacity lookup.
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i] != start->node) continue;
      if (book.capacity(start->node, start->device).free > 0) {
        keep(i);
        return;
      }
      break;
    }
    // Not the machines the plan gives other jobs (admitted ones among them, whose pods are on
    // their way): kube-scheduler would bind this pod there and leave that job, ungated, with
    // no machine, to steal the next one in turn.
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const std::optional<NodeCapacity> found = book.find_capacity(candidates[i], start->device);
      if (found && found->free > 0 && found->free > plan.planned_on(candidates[i], start->device)) {
        keep(i);
      }
    }
    if (!result.node_names->empty()) return;
  }

  // No node passes: every node gets its reason, which kube-scheduler's FitError shows
  // (`kubectl describe pod`) and FailedAndUnresolvableNodes keeps preemption off. A handful
  // of reasons per answer, stored once and shared by the nodes they apply to.
  using Reason = NodeReasons::Reason;
  NodeReasons& failed = result.failed_nodes;
  NodeReasons& unresolvable = result.failed_and_unresolvable_nodes;
  std::optional<Reason> no_capacity, never_here, waiting, planned_for_others;
  std::map<int, Reason> insufficient;  // by the node's total machines
  auto once = [](std::optional<Reason>& reason, NodeReasons& in, auto text) {
    if (!reason) reason = in.reason(text());
    return *reason;
  };
  for (const std::string_view node : candidates) {
    const std::optional<NodeCapacity> found = book.find_capacity(node, variant.device);
    const NodeCapacity capacity = found.value_or(NodeCapacity{});
    if (!found) {
      failed.add(node, failed.reason("node " + std::string(node) + " is not in allox's inventory"));
    } else if (capacity.total == 0) {
      unresolvable.add(node, once(no_capacity, unresolvable,
                                  [&] { return "node has no " + resource + " capacity"; }));
    } else if (!never.empty()) {
      unresolvable.add(node, once(never_here, unresolvable, [&] { return never; }));
    } else if (start == nullptr) {
      failed.add(node, once(waiting, failed, [&] { return wait_reason; }));
    } else if (capacity.free > 0) {
      // Free in the book, but every free machine there is another job's in the plan.
      failed.add(node, once(planned_for_others, failed, [&] {
                   return "free " + resource + " here is planned for other jobs";
                 }));
    } else {
      // The job starts now, but no offered node of its device has a free machine.
      auto it = insufficient.find(capacity.total);
      if (it == insufficient.end()) {
        it =
            insufficient
                .emplace(capacity.total, failed.reason("insufficient free " + resource + " (0 of " +
                                                       std::to_string(capacity.total) + " free)"))
                .first;
      }
      failed.add(node, it->second);
    }
  }
}

std::shared_ptr<const Plan> ExtenderVerbs::wait_for_watch(const JobVariant& variant,
                                                          const ExtenderArgs& args,
                                                          std::shared_ptr<const Plan> plan) {
  if (options_.watch_wait.count() <= 0) return plan;
  using Clock = std::chrono::steady_clock;
  const Cooling skip = cooling(variant.device);
  const NodeNameList& offered = args.candidates();
  const auto began = Clock::now();
  const auto deadline = began + options_.watch_wait;
  bool waited = false;
  auto waited_for = [&] { return std::chrono::duration<double>(Clock::now() - began).count(); };
  while (true) {
    Behind lag = planner_.read([&](const JobBook& book) {
      // freed_version() is an atomic written under the book's lock: read with the book it fits.
      return behind(book, *plan, variant, /*new_job=*/false, offered, skip,
                    planner_.freed_version());
    });
    if (lag.version == 0) {
      if (waited) metrics_.record_watch_wait(waited_for(), /*settled=*/true);
      return plan;
    }
    if (Clock::now() >= deadline) {
      if (!waited) return plan;
      metrics_.record_watch_wait(waited_for(), /*settled=*/false);
      std::lock_guard lock(vain_mu_);
      auto& cooling = vain_until_[variant.device];
      const auto now = Clock::now();
      for (std::string_view node : lag.busy) {
        cooling.insert_or_assign(std::string(node), now + options_.vain_wait_cooldown);
      }
      rebuild_cooled(now);
      return plan;
    }
    if (!waited && options_.on_watch_wait) options_.on_watch_wait();
    waited = true;
    plan = planner_.wait_for_plan(lag.version, deadline);
  }
}

ExtenderVerbs::Cooling ExtenderVerbs::cooling(const DeviceType& device) {
  // Offered nodes a recent wait found busy to the end are left out (vain_wait_cooldown); the
  // offered names are read where the request holds them.
  std::lock_guard lock(vain_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now >= cooled_expiry_) rebuild_cooled(now);
  auto found = cooled_.find(device);
  return found == cooled_.end() ? Cooling{} : Cooling{found->second};
}

void ExtenderVerbs::rebuild_cooled(std::chrono::steady_clock::time_point now) {
  cooled_.clear();
  cooled_expiry_ = std::chrono::steady_clock::time_point::max();
  for (auto it = vain_until_.begin(); it != vain_until_.end();) {
    std::erase_if(it->second, [&](const auto& entry) { return entry.second <= now; });
    if (it->second.empty()) {
      it = vain_until_.erase(it);
      continue;
    }
    auto nodes = std::make_shared<std::vector<std::string>>();
    nodes->reserve(it->second.size());
    for (const auto& [node, until] : it->second) {
      nodes->push_back(node);  // in order
      cooled_expiry_ = std::min(cooled_expiry_, until);
    }
    cooled_.emplace(it->first, std::move(nodes));
    ++it;
  }
}

std::vector<HostPriority> ExtenderVerbs::prioritize(const ExtenderArgs& args) {
  std::vector<HostPriority> priorities;
  const NodeNameList& candidates = args.candidates();
  priorities.reserve(candidates.size());
  for (std::string_view node : candidates) priorities.push_back({std::string(node), 0});
  if (!ours(args.pod)) return priorities;
  auto variant = read_job_variant(args.pod, planner_.config().devices, planner_.config().tenancy);
  if (!variant) return priorities;
  std::shared_ptr<const Plan> plan = planner_.latest_plan();
  auto it = plan->starts.find(variant->job_id);
  if (it == plan->starts.end() || it->second.device != variant->device) return priorities;
  for (HostPriority& p : priorities) {
    if (p.host == it->second.node) p.score = kMaxExtenderPriority;
  }
  return priorities;
}

BindingResult ExtenderVerbs::bind(const BindingArgs& args) {
  // Binds run concurrently (kube-scheduler binds in goroutines), so the check and the
  // reservation below are one step under bind_mu_; the intent (grouped with concurrent ones into
  // one fsync), the API server's binding and the start run outside it.
  std::unique_lock bind_lock(bind_mu_);
  auto refuse = [&](std::string why) {
    metrics_.record_bind_failure();
    return BindingResult{std::move(why)};
  };
  struct Checked {
    JobVariant variant;
    std::int64_t job_row = 0;
    int preferred_slot = -1;
    std::string refusal;
    bool unknown = false;  // the book does not know the pod: bind_unknown decides
  };
  const std::string namespace_name = args.pod_namespace.empty() ? "default" : args.pod_namespace;
  Checked checked = planner_.read([&](const JobBook& book) {
    Checked c;
    const BookJob* job = book.job_of_pod(namespace_name, args.pod_name);
    std::string pod = args.pod_namespace + "/" + args.pod_name;
    if (job == nullptr) {
      c.unknown = true;
      return c;
    }
    c.job_row = job->record.row;
    if (job != nullptr && job->intent) {
      c.refusal = "job " + job->record.id + " has a bind to " + job->intent->node + " in doubt";
      return c;
    }
    if (auto other = binding_.find(job->record.id); other != binding_.end()) {
      c.refusal = "job " + job->record.id + " is being bound to " + other->second.node;
      return c;
    }
    if (job->record.phase != JobPhase::kQueued) {
      c.refusal = "job " + job->record.id + " is " + phase_name(job->record.phase) +
                  (job->record.phase == JobPhase::kRunning
                       ? " as pod " + job->record.pod_namespace + "/" + job->record.pod_name
                       : std::string());
      return c;
    }
    auto it = job->variants.find(namespace_name + "/" + args.pod_name);
    if (it == job->variants.end()) {
      c.refusal = "pod " + pod + " is not a variant of job " + job->record.id + " any more";
      return c;
    }
    c.variant = it->second;
    if (!book.has_node(args.node)) {
      c.refusal = "node " + args.node + " is not in allox's inventory";
      return c;
    }
    NodeCapacity capacity = book.capacity(args.node, c.variant.device);
    // Machines that binds in flight hold there and the book does not show started yet.
    int held = 0;
    for (const auto& [id, where] : binding_) {
      const BookJob* other = book.job(id);
      if (where.node == args.node && where.device == c.variant.device && other != nullptr &&
          other->record.phase == JobPhase::kQueued) {
        ++held;
      }
    }
    if (capacity.free - held <= 0) {
      c.refusal = "node " + args.node + " has no free " +
                  planner_.config().devices.resource_for(c.variant.device) + " (" +
                  std::to_string(std::max(0, capacity.free - held)) + " of " +
                  std::to_string(capacity.total) + " free" +
                  (held > 0 ? ", " + std::to_string(held) + " being bound" : std::string()) + ")";
      return c;
    }
    std::shared_ptr<const Plan> plan = planner_.latest_plan();
    if (auto it = plan->starts.find(job->record.id);
        it != plan->starts.end() && it->second.node == args.node) {
      c.preferred_slot = it->second.slot;
    }
    return c;
  });
  if (checked.unknown) {
    bind_lock.unlock();  // it only refuses or passes through: no reservation to make
    return bind_unknown(args, namespace_name);
  }
  if (!checked.refusal.empty()) return refuse(std::move(checked.refusal));
  const std::string& job_id = checked.variant.job_id;
  binding_[job_id] = {args.node, checked.variant.device};
  bind_lock.unlock();
  // Whatever happens next, the reservation goes once the book shows the start or the bind failed.
  struct Release {
    ExtenderVerbs& verbs;
    const std::string& job_id;
    ~Release() {
      std::lock_guard lock(verbs.bind_mu_);
      verbs.binding_.erase(job_id);
    }
  } release{*this, job_id};
  if (api_ != nullptr) {
    // The intent is durable before the API server hears of the bind: a crash between the two
    // leaves an intent that start-up settles from the pod's spec.nodeName.
    const JobVariant& v = checked.variant;
    BindIntent intent{checked.job_row, v.job_id, v.pod, args.node, v.device, planner_.now()};
    if (auto s = planner_.record_bind_intent(intent); !s) return refuse(s.message());
    if (auto s = api_->bind(args); !s) {
      (void)planner_.drop_bind_intent(checked.job_row);  // if this fails, start-up settles it
      return refuse(s.message());
    }
  }
  // With an API server the intent is on disk and the binding is in the API server: the start
  // needs no fsync of its own (start-up settles a lost one from the intent).
  auto started =
      planner_.record_start(checked.variant, args.node, checked.preferred_slot,
                            api_ != nullptr ? Durability::kWritten : Durability::kSynced);
  if (!started) return refuse(started.message());
  // The job's other variants are deleted by the controller, in the background: never here.
  return BindingResult{};
}

BindingResult ExtenderVerbs::bind_unknown(const BindingArgs& args,
                                          const std::string& namespace_name) {
  const std::string pod = namespace_name + "/" + args.pod_name;
  auto refuse = [&](std::string why) {
    metrics_.record_bind_failure();
    return BindingResult{std::move(why)};
  };
  if (planner_.config().scheduler_name.empty()) {  // every pod is allox's (config.h)
    return refuse("pod " + pod + " is unknown to allox: filter it first");
  }
  // Whose pod is it? Observed state says: the watch holds only allox's pods, and the API server
  // knows the ones the watch has not brought in yet. Guessing "another scheduler's" would bind
  // an allox pod past the one-run-per-job check (a sibling dropped by its job's admission).
  std::optional<std::string> job_id;  // set: allox's pod, of this job ("" when unreadable)
  if (options_.watched_job) job_id = options_.watched_job(namespace_name, args.pod_name);
  if (!job_id) {
    if (api_ == nullptr) return BindingResult{};  // no API server: nothing to ask or bind
    auto found = api_->pod(namespace_name, args.pod_name);
    if (!found) return refuse("pod " + pod + " is unknown to allox, and " + found.message());
    if (!found->has_value()) return refuse("pod " + pod + " does not exist");
    if (!ours(**found)) {  // another scheduler's: bound as asked, nothing recorded
      if (auto s = api_->bind(args); !s) return BindingResult{s.message()};
      return BindingResult{};
    }
    auto variant = read_job_variant(**found, planner_.config().devices, planner_.config().tenancy);
    job_id = variant ? variant->job_id : std::string();
  }
  if (job_id->empty()) {
    return refuse("allox cannot read pod " + pod +
                  "'s allox.io annotations; fix them and it is scheduled");
  }
  const std::optional<std::string> admitted = planner_.admitted_as(*job_id);
  return refuse(planner_.read([&](const JobBook& book) -> std::string {
    const BookJob* job = book.job(*job_id);
    const std::string& id = *job_id;
    if (job == nullptr || job->record.phase == JobPhase::kQueued) {
      if (admitted && *admitted != pod) {
        return "job " + id + " was admitted as variant " + *admitted + "; pod " + pod +
               " is not used";
      }
      return "pod " + pod + " of job " + id + " is not yet known to allox: filter it first";
    }
    if (job->record.phase == JobPhase::kRunning) {
      return "job " + id + " already runs as pod " + job->record.pod_namespace + "/" +
             job->record.pod_name + "; pod " + pod + " is not used";
    }
    return "job " + id + " is " + phase_name(job->record.phase) + "; pod " + pod + " is not used";
  }));
}

PreemptionResult ExtenderVerbs::preempt(const PreemptionArgs& args) {
  // allox jobs are non-preemptive once started: refuse any node whose victims include one.
  std::set<std::string> protected_uids = planner_.read([](const JobBook& book) {
    std::set<std::string> uids;
    for (const auto& [id, job] : book.jobs()) {
      if (job.record.phase == JobPhase::kRunning && !job.record.pod_uid.empty()) {
        uids.insert(job.record.pod_uid);
      }
    }
    return uids;
  });
  PreemptionResult result;
  for (const auto& [node, victims] : args.victims) {
    bool touches_allox_job =
        std::any_of(victims.pod_uids.begin(), victims.pod_uids.end(),
                    [&](const std::string& uid) { return protected_uids.count(uid) > 0; });
    if (!touches_allox_job) result.victims[node] = victims;
  }
  return result;
}

}  // namespace allox::extender
