// /filter: the latest plan's answer for a pod, after at most one short wait for the watch when
// the offer shows alloxd behind the cluster (verbs.h, the class comment).
#include "alloxd/verbs/verbs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <string_view>

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

// A node's machines of any of `types` (a node offers one type per resource, so at most one of
// them); std::nullopt when the node is not in the inventory.
std::optional<NodeCapacity> capacity_of(const JobBook& book, std::string_view node,
                                        const std::vector<DeviceType>& types) {
  if (types.size() == 1) return book.find_capacity(node, types.front());
  std::optional<NodeCapacity> out;
  for (const DeviceType& type : types) {
    const std::optional<NodeCapacity> found = book.find_capacity(node, type);
    if (!found) return std::nullopt;
    if (!out) out.emplace();
    out->total += found->total;
    out->free += found->free;
  }
  return out;
}

// At most one capacity lookup per offered node, and one in all when the job starts now on its
// planned node. `offered` outlives the call (busy views it); `skip(node)`: a node left out
// (vain_wait_cooldown). `new_job`: the book does not have the variant's job yet (nor does any
// plan): only the offered nodes can say that alloxd is behind.
template <typename Skip>
Behind behind(const JobBook& book, const Plan& plan, const JobVariant& variant, bool new_job,
              const NodeNameList& offered, const Skip& skip, std::uint64_t freed_version) {
  Behind out;
  bool starts = false;
  DeviceType planned_type;
  if (!new_job) {
    const BookJob* job = book.job(variant.job_id);
    if (job == nullptr || job->record.phase != JobPhase::kQueued || job->intent ||
        !job->parked.empty() ||
        !job->variants.count(variant.pod.namespace_name + "/" + variant.pod.name)) {
      return out;  // the answer does not depend on the plan's age
    }
    auto start = plan.starts.find(variant.job_id);
    if (start != plan.starts.end() && !variant.runs_on(start->second.device)) {
      return out;  // another variant of it starts
    }
    starts = start != plan.starts.end();
    if (starts) {
      // The usual case: it starts now on its planned node, offered with a free machine.
      const std::string& planned = start->second.node;
      if (!skip(planned) && offered.contains(planned) &&
          book.capacity(planned, start->second.device).free >= variant.units) {
        return out;
      }
      planned_type = start->second.device;
    }
  }
  // Starting: the nodes of its planned type; waiting: of any type it runs on.
  const std::vector<DeviceType> types =
      starts ? std::vector<DeviceType>{planned_type} : variant.device_types();
  for (std::string_view node : offered) {
    if (skip(node)) continue;
    NodeCapacity capacity = capacity_of(book, node, types).value_or(NodeCapacity{});
    if (starts && capacity.free >= variant.units) return Behind{};  // it starts here now
    if (capacity.total >= variant.units && capacity.free < variant.units) out.busy.push_back(node);
  }
  // kube-scheduler's own resource filter passed these nodes: it has seen machines freed there
  // that the watch has not brought in yet. Any later book, planned, is worth a look.
  if (!out.busy.empty()) {
    out.version = book.version() + 1;
  } else if (plan.version < freed_version) {
    out.version = freed_version;  // a machine was freed after this plan was made
  }
  return out;
}

// Why no node can take this variant, when that holds for every node; empty otherwise.
// `job`: the book's job of the variant (null when it has none, or when unregistered).
std::string never_reason(const BookJob* job, const JobVariant& variant, bool unregistered) {
  const std::string& id = variant.job_id;
  if (unregistered) return "";  // a new job: queued once the watch registers it
  if (job == nullptr) return "job " + id + " is no longer queued (its pods were deleted)";
  if (job->record.phase == JobPhase::kQueued && !job->variants.count(pod_key(variant.pod))) {
    return "job " + id + " runs as variant " +
           (job->variants.empty() ? std::string("(none)") : job->variants.begin()->first) +
           "; this pod is not used";
  }
  if (job->record.phase == JobPhase::kRunning) {
    return "job " + id + " already runs as pod " + job->record.pod_namespace + "/" +
           job->record.pod_name + " on " + job->record.node;
  }
  if (job->record.phase == JobPhase::kDone) return "job " + id + " has finished";
  if (job->record.phase == JobPhase::kRemoved) return "job " + id + " was removed by an admin";
  if (job->parked_for_size) {
    return "allox cannot schedule job " + id + ": " + job->parked +
           " (it is planned again when a node that large joins; or DELETE /v1/jobs/" + id + ")";
  }
  if (!job->parked.empty()) {
    return "allox cannot schedule job " + id + ": " + job->parked +
           " (fix the pod's allox.io annotations, or DELETE /v1/jobs/" + id + ")";
  }
  return "";
}

// What the plan says of the variant: it starts now (`start`, on one of the variant's devices),
// or why it waits; `error` when the plan's round failed and nothing else explains the pod.
struct PlanAnswer {
  const PlannedStart* start = nullptr;
  std::string wait_reason;
  std::string error;
};

PlanAnswer plan_answer(const Plan& plan, const BookJob* job, const JobVariant& variant,
                       bool unregistered, bool never, double now) {
  const std::string& id = variant.job_id;
  PlanAnswer out;
  if (unregistered) {
    if (!plan.error.empty()) {
      out.error = "allox's scheduling round failed: " + plan.error;
    } else {
      out.wait_reason = kUnplanned;
    }
  } else if (job != nullptr && job->intent) {
    out.wait_reason = "job " + id + ": a bind to " + job->intent->node +
                      " from before alloxd restarted is being confirmed with the API server";
  } else if (auto it = plan.starts.find(id); it != plan.starts.end()) {
    out.start = &it->second;
    if (!variant.runs_on(out.start->device)) {
      out.wait_reason = "job " + id + " starts on " + out.start->device +
                        " (another variant); this " + variant.device + " variant is not used";
      out.start = nullptr;
    }
  } else if (auto w = plan.waiting.find(id); w != plan.waiting.end()) {
    out.wait_reason = "queued: position " + std::to_string(w->second.position) + " of " +
                      std::to_string(w->second.queue_length) +
                      (w->second.note.empty() ? "" : " (" + w->second.note + ")");
    if (w->second.estimated_start) {
      out.wait_reason += ", est. start in " + whole_seconds(*w->second.estimated_start - now);
    }
  } else if (!plan.error.empty() && !never) {
    out.error = "allox's scheduling round failed: " + plan.error;
  } else {
    out.wait_reason = kUnplanned;
  }
  return out;
}

// Keeps the nodes the job starts on now: the planned node, or, when kube-scheduler did not offer
// it or it is full, any offered node with as many free machines of the planned device (one the
// variant runs on: a start on another device left `start` null; never a node of another type)
// as the pod needs (`units`), beyond those the plan gives other starts there. Only those nodes
// are answered: kube-scheduler takes NodeNames as its new feasible list and reads the failed
// maps only to explain a pod that fits nowhere (findNodesThatPassExtenders), so reasons for the
// other 4,999 nodes would be rendered and parsed for nobody. Whether a node was kept.
bool keep_start_nodes(const JobBook& book, const Plan& plan, const PlannedStart& start, int units,
                      const ExtenderArgs& args, FilterResult& result) {
  const NodeNameList& candidates = args.candidates();
  auto keep = [&](std::size_t i) {
    result.node_names->push_back(candidates[i]);
    if (args.node_objects) result.node_objects->push_back((*args.node_objects)[i]);
  };
  // The usual case costs one scan of the names and one capacity lookup.
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i] != start.node) continue;
    if (book.capacity(start.node, start.device).free >= units) {
      keep(i);
      return true;
    }
    break;
  }
  // Not the machines the plan gives other jobs (admitted ones among them, whose pods are on
  // their way): kube-scheduler would bind this pod there and leave that job, ungated, with
  // no machine, to steal the next one in turn.
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::optional<NodeCapacity> found = book.find_capacity(candidates[i], start.device);
    if (found && found->free - plan.planned_on(candidates[i], start.device) >= units) {
      keep(i);
    }
  }
  return !result.node_names->empty();
}

// No node passes: every node gets its reason, which kube-scheduler's FitError shows
// (`kubectl describe pod`) and FailedAndUnresolvableNodes keeps preemption off. A handful
// of reasons per answer, stored once and shared by the nodes they apply to.
void refuse_every_node(const JobBook& book, const JobVariant& variant, const std::string& resource,
                       const std::string& never, const PlanAnswer& planned,
                       const NodeNameList& candidates, FilterResult& result) {
  using Reason = NodeReasons::Reason;
  NodeReasons& failed = result.failed_nodes;
  NodeReasons& unresolvable = result.failed_and_unresolvable_nodes;
  std::optional<Reason> no_capacity, never_here, waiting, planned_for_others, too_small,
      other_type;
  std::map<int, Reason> insufficient;  // by the node's total and free machines
  const std::vector<DeviceType> types = variant.device_types();
  auto once = [](std::optional<Reason>& reason, NodeReasons& in, auto text) {
    if (!reason) reason = in.reason(text());
    return *reason;
  };
  for (const std::string_view node : candidates) {
    const std::optional<NodeCapacity> found = capacity_of(book, node, types);
    const NodeCapacity capacity = found.value_or(NodeCapacity{});
    if (!found) {
      failed.add(node, failed.reason("node " + std::string(node) + " is not in allox's inventory"));
    } else if (capacity.total == 0) {
      unresolvable.add(node, once(no_capacity, unresolvable,
                                  [&] { return "node has no " + resource + " capacity"; }));
    } else if (capacity.total < variant.units) {
      unresolvable.add(node, once(too_small, unresolvable, [&] {
                         return "node has fewer " + resource + " than the pod's " +
                                std::to_string(variant.units) + " on one node";
                       }));
    } else if (!never.empty()) {
      unresolvable.add(node, once(never_here, unresolvable, [&] { return never; }));
    } else if (planned.start == nullptr) {
      failed.add(node, once(waiting, failed, [&] { return planned.wait_reason; }));
    } else if (const NodeCapacity on_type =
                   types.size() == 1 ? capacity : book.capacity(node, planned.start->device);
               on_type.total == 0) {
      // A node of another of its types: the plan chose this one's type for no job of it.
      failed.add(node, once(other_type, failed, [&] {
                   return "job " + variant.job_id + " starts on " + planned.start->device +
                          " (allox's choice of the types it runs on); this node has none";
                 }));
    } else if (on_type.free >= variant.units) {
      // Free in the book, but the free machines there are other jobs' in the plan.
      failed.add(node, once(planned_for_others, failed, [&] {
                   return "free " + resource + " here is planned for other jobs";
                 }));
    } else {
      // The job starts now, but no offered node of its planned type has as many free machines
      // as it needs.
      const int key = on_type.total * (kMaxUnits + 1) + on_type.free;
      auto it = insufficient.find(key);
      if (it == insufficient.end()) {
        std::string text = "insufficient free " + resource + " (" + std::to_string(on_type.free) +
                           " of " + std::to_string(on_type.total) + " free";
        if (variant.units > 1) text += ", the pod needs " + std::to_string(variant.units);
        it = insufficient.emplace(key, failed.reason(text + ")")).first;
      }
      failed.add(node, it->second);
    }
  }
}

}  // namespace

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
  // unregistered: the book may have the job by now (the watch delivered it), but the plan
  // was taken before the filter looked: it is answered as a job no plan has yet.
  const BookJob* job = unregistered ? nullptr : book.job(variant.job_id);
  const std::string never = never_reason(job, variant, unregistered);
  const PlanAnswer planned = plan_answer(plan, job, variant, unregistered, !never.empty(), now);
  if (!planned.error.empty()) {
    result.error = planned.error;
    return;
  }
  if (planned.start != nullptr && never.empty() && !planned.start->members.empty()) {
    answer_member(book, *planned.start, variant, args, result);  // a gang's member
    return;
  }
  if (planned.start != nullptr && never.empty() &&
      keep_start_nodes(book, plan, *planned.start, variant.units, args, result)) {
    return;
  }
  const std::string resource = planner_.config().devices.resource_for(variant.device);
  refuse_every_node(book, variant, resource, never, planned, args.candidates(), result);
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

}  // namespace allox::extender
