// /bind: the pod's machine reserved against concurrent binds, its intent made durable, the
// binding posted and the start recorded; and a bind of a pod the book does not know.
#include <algorithm>
#include <optional>
#include <string>

#include "alloxd/verbs/verbs.h"
#include "alloxd/verbs/verbs_bind_check.h"

namespace allox::extender {

BindingResult ExtenderVerbs::refuse_bind(std::string why) {
  metrics_.record_bind_failure();
  return BindingResult{std::move(why)};
}

BindingResult ExtenderVerbs::bind(const BindingArgs& args) {
  // Binds run concurrently (kube-scheduler binds in goroutines), so the check and the
  // reservation below are one step under bind_mu_; the intent (grouped with concurrent ones into
  // one fsync), the API server's binding and the start run outside it.
  std::unique_lock bind_lock(bind_mu_);
  const std::string namespace_name = args.pod_namespace.empty() ? "default" : args.pod_namespace;
  BindCheck checked =
      planner_.read([&](const JobBook& book) { return check_bind(book, args, namespace_name); });
  if (checked.unknown) {
    bind_lock.unlock();  // it only refuses or passes through: no reservation to make
    return bind_unknown(args, namespace_name);
  }
  if (!checked.refusal.empty()) return refuse_bind(std::move(checked.refusal));
  if (checked.gang) {
    bind_lock.unlock();  // the plan's placements are the gang's reservation
    return bind_member(args, checked);
  }
  const std::string& job_id = checked.variant.job_id;
  binding_[job_id] = {args.node, checked.variant.device, checked.variant.units};
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
    if (auto s = planner_.record_bind_intent(intent); !s) return refuse_bind(s.message());
    if (auto s = api_->bind(args); !s) {
      (void)planner_.drop_bind_intent(checked.job_row,
                                      v.job_id);  // if this fails, start-up settles it
      return refuse_bind(s.message());
    }
  }
  // With an API server the intent is on disk and the binding is in the API server: the start
  // needs no fsync of its own (start-up settles a lost one from the intent).
  auto started =
      planner_.record_start(checked.variant, args.node, checked.preferred_slot,
                            api_ != nullptr ? Durability::kWritten : Durability::kSynced);
  if (!started) return refuse_bind(started.message());
  // The job's other variants are deleted by the controller, in the background: never here.
  return BindingResult{};
}

ExtenderVerbs::BindCheck ExtenderVerbs::check_bind(const JobBook& book, const BindingArgs& args,
                                                   const std::string& namespace_name) const {
  BindCheck c;
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
  if (job->is_gang() && job->record.phase == JobPhase::kQueued) {
    auto member = job->variants.find(namespace_name + "/" + args.pod_name);
    if (member == job->variants.end()) {
      c.refusal = "pod " + pod + " is not a member of gang " + job->record.id + " any more";
      return c;
    }
    c.variant = member->second;
    check_member(*job, args, c);
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
  // A variant of several types (a GPU of any model) binds as the type this node has.
  if (auto type = book.device_on(args.node, c.variant)) {
    c.variant.device = *type;
    c.variant.devices = {*type};
  }
  NodeCapacity capacity = book.capacity(args.node, c.variant.device);
  // Machines that binds in flight hold there and the book does not show started yet.
  int held = 0;
  for (const auto& [id, where] : binding_) {
    const BookJob* other = book.job(id);
    if (where.node == args.node && where.device == c.variant.device && other != nullptr &&
        other->record.phase == JobPhase::kQueued) {
      held += where.units;
    }
  }
  // Never more than the node has: the pod's k units must be free there, beyond those held.
  if (capacity.free - held < c.variant.units) {
    const std::string resource = planner_.config().devices.resource_for(c.variant.device);
    const std::string free = std::to_string(std::max(0, capacity.free - held)) + " of " +
                             std::to_string(capacity.total) + " free" +
                             (held > 0 ? ", " + std::to_string(held) + " being bound" : "");
    c.refusal = c.variant.units == 1
                    ? "node " + args.node + " has no free " + resource + " (" + free + ")"
                    : "node " + args.node + " has too few free " + resource + " (" + free +
                          "); pod " + pod + " needs " + std::to_string(c.variant.units);
    return c;
  }
  std::shared_ptr<const Plan> plan = planner_.latest_plan();
  if (auto it = plan->starts.find(job->record.id);
      it != plan->starts.end() && it->second.node == args.node) {
    c.preferred_slot = it->second.slot;
  }
  return c;
}

BindingResult ExtenderVerbs::bind_unknown(const BindingArgs& args,
                                          const std::string& namespace_name) {
  const std::string pod = namespace_name + "/" + args.pod_name;
  if (planner_.config().scheduler_name.empty()) {  // every pod is allox's (config.h)
    return refuse_bind("pod " + pod + " is unknown to allox: filter it first");
  }
  // Whose pod is it? Observed state says: the watch holds only allox's pods, and the API server
  // knows the ones the watch has not brought in yet. Guessing "another scheduler's" would bind
  // an allox pod past the one-run-per-job check (a sibling dropped by its job's admission).
  std::optional<std::string> job_id;  // set: allox's pod, of this job ("" when unreadable)
  if (options_.watched_job) job_id = options_.watched_job(namespace_name, args.pod_name);
  if (!job_id) {
    if (api_ == nullptr) return BindingResult{};  // no API server: nothing to ask or bind
    auto found = api_->pod(namespace_name, args.pod_name);
    if (!found) return refuse_bind("pod " + pod + " is unknown to allox, and " + found.message());
    if (!found->has_value()) return refuse_bind("pod " + pod + " does not exist");
    if (!ours(**found)) {  // another scheduler's: bound as asked, nothing recorded
      if (auto s = api_->bind(args); !s) return BindingResult{s.message()};
      return BindingResult{};
    }
    auto variant = read_job_variant(**found, planner_.config().devices, planner_.config().tenancy);
    job_id = variant ? variant->job_id : std::string();
  }
  if (job_id->empty()) {
    return refuse_bind("allox cannot read pod " + pod +
                       "'s allox.io annotations; fix them and it is scheduled");
  }
  const std::optional<std::string> admitted = planner_.admitted_as(*job_id);
  return refuse_bind(planner_.read([&](const JobBook& book) -> std::string {
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

}  // namespace allox::extender
