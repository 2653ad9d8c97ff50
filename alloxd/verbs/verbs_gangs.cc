// The verbs for a gang's members (docs/design.md, "Gangs"): /filter passes a member only on its
// own placement's node; /bind checks the member against the plan's placement and gathers the
// gang's binds (gang_gather.h): all N Bindings posted together, or none; a gang some of whose
// Bindings the API server refused after others were made is rolled back.
#include <map>
#include <string>

#include "alloxd/http/http_server.h"
#include "alloxd/verbs/verbs.h"
#include "alloxd/verbs/verbs_bind_check.h"

namespace allox::extender {

// Every member of the largest gang the book lets start can wait at /bind at once.
static_assert(kBlockingThreads >= static_cast<std::size_t>(kMaxGangBoundTogether));

void ExtenderVerbs::check_member(const BookJob& job, const BindingArgs& args, BindCheck& c) const {
  const std::string& id = job.record.id;
  const std::string pod = c.variant.pod.namespace_name + "/" + c.variant.pod.name;
  c.gang = true;
  c.gang_size = job.record.gang;
  std::shared_ptr<const Plan> plan = planner_.latest_plan();
  auto start = plan->starts.find(id);
  const GangPlacement* placement =
      start == plan->starts.end() ? nullptr : start->second.member(pod);
  if (placement == nullptr) {
    c.refusal = "gang " + id + " does not start now with member " + pod;
    return;
  }
  if (placement->node != args.node) {
    c.refusal =
        "member " + pod + " of gang " + id + " starts on " + placement->node + ", not " + args.node;
    return;
  }
  c.start = start->second;
  c.variant.device = c.start.device;
  c.variant.devices = {c.start.device};
  c.preferred_slot = placement->slot;
}

BindingResult ExtenderVerbs::bind_member(const BindingArgs& args, const BindCheck& checked) {
  const std::string job_id = checked.variant.job_id;
  const DeviceType device = checked.start.device;
  std::string outcome = gang_gather_.arrive(job_id, {pod_key(checked.variant.pod), args},
                                            checked.gang_size, options_.gang_bind_wait,
                                            [&](const std::vector<GangGather::Member>& members) {
                                              return bind_gang(job_id, device, members);
                                            });
  if (!outcome.empty()) return refuse_bind(std::move(outcome));
  return BindingResult{};
}

GangGather::Outcomes ExtenderVerbs::bind_gang(const std::string& job_id, const DeviceType& device,
                                              const std::vector<GangGather::Member>& members) {
  GangGather::Outcomes out;
  std::map<std::string, std::string> nodes;
  std::string failure;
  int bound = 0;
  for (const GangGather::Member& m : members) {
    nodes[m.pod] = m.args.node;
    out[m.pod] = "";
    if (api_ == nullptr) continue;
    if (auto s = api_->bind(m.args); !s) {
      out[m.pod] = s.message();
      if (failure.empty()) {
        failure =
            "member " + m.pod + "'s binding to " + m.args.node + " failed (" + s.message() + ")";
      }
    } else {
      ++bound;
    }
  }
  if (failure.empty()) {
    // Every Binding is in the API server (or there is none): the gang runs. Were the start's
    // record to fail, the watch records it from the bound members (gang_member_bound).
    (void)planner_.record_gang_start(job_id, nodes, device,
                                     api_ != nullptr ? Durability::kWritten : Durability::kSynced);
    return out;
  }
  if (bound == 0) return out;  // none bound: each is tried again, nothing to undo
  // A partial gang must not run: its members are deleted (the controller, by UID) and it waits.
  const std::string note = "rolled back: " + failure + "; " + std::to_string(bound) + " of " +
                           std::to_string(members.size()) + " members were bound and are deleted";
  planner_.roll_back_gang(job_id, note);
  for (auto& [pod, outcome] : out) outcome = "gang " + job_id + " " + note;
  return out;
}

void ExtenderVerbs::answer_member(const JobBook& book, const PlannedStart& start,
                                  const JobVariant& variant, const ExtenderArgs& args,
                                  FilterResult& result) const {
  const std::string pod = pod_key(variant.pod);
  const GangPlacement* placement = start.member(pod);
  const NodeNameList& candidates = args.candidates();
  if (placement != nullptr) {
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i] != placement->node) continue;
      if (book.capacity(placement->node, start.device).free < start.units) break;
      result.node_names->push_back(candidates[i]);
      if (args.node_objects) result.node_objects->push_back((*args.node_objects)[i]);
      return;
    }
  }
  const std::string reason =
      placement != nullptr
          ? "member " + pod + " of gang " + variant.job_id + " starts on " + placement->node +
                " (" + units_text(start.device, start.units) + "), once its units there are free"
          : "gang " + variant.job_id + " starts without pod " + pod +
                " (it has more pods than its members)";
  auto shared = result.failed_nodes.reason(reason);
  for (std::string_view node : candidates) result.failed_nodes.add(node, shared);
}

}  // namespace allox::extender
