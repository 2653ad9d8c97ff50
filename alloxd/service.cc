#include "alloxd/service.h"

#include <unistd.h>

#include <cstdlib>

namespace allox::extender {
namespace {

// This replica's name in the Lease: the pod name the Downward API gives, else host and pid.
std::string replica_identity() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') return pod;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + "-" + std::to_string(::getpid());
}

}  // namespace

Expected<std::unique_ptr<ExtenderService>> ExtenderService::create(
    const ExtenderConfig& config, std::unique_ptr<SchedulingPolicy> policy,
    std::unique_ptr<ClusterApi> api, ServiceOptions options) {
  std::unique_ptr<ExtenderService> service(new ExtenderService());
  ExtenderService& s = *service;
  const bool cluster = config.apiserver.has_value();
  PlannerOptions planner_options;
  planner_options.clock = std::move(options.clock);
  if (!cluster) planner_options.inventory = config.nodes;
  // The controller admits each plan's starts (a short store transaction): the next plan waits
  // for them, so it holds their machines (PlannerOptions::admissions_wait).
  if (cluster) planner_options.admissions_wait = 0.5;
  auto planner = Planner::create(config, std::move(policy), s.metrics_, std::move(planner_options));
  if (!planner) return planner.error();
  s.planner_ = std::move(*planner);
  s.binder_ = std::move(api);
  if (cluster) {
    kube::KubeClientOptions client_options;
    client_options.url = config.apiserver->url;
    client_options.token = config.apiserver->token;
    client_options.ca_file = config.apiserver->ca_file;
    client_options.max_answer_bytes = config.limits.apiserver_reply_bytes;
    s.client_ = std::make_unique<kube::KubeClient>(client_options);
    if (s.binder_ == nullptr) s.binder_ = make_kube_binder(*s.client_);
    s.events_ = std::make_unique<kube::EventRecorder>(*s.client_, kube::EventOptions{});
    if (config.apiserver->lease) {
      kube::LeaseOptions lease;
      lease.namespace_name = config.apiserver->lease->namespace_name;
      lease.name = config.apiserver->lease->name;
      lease.identity = replica_identity();
      s.lease_ = std::make_unique<kube::LeaderLease>(*s.client_, lease, [&s](bool leading) {
        // A new leader rebuilds its picture from the API server before it acts.
        if (leading && s.feed_) s.feed_->relist();
        if (s.controller_) s.controller_->leader_changed();
      });
    }
    // The planner's copy of the config outlives the feed (the caller's may not).
    s.feed_ = std::make_unique<ClusterFeed>(*s.client_, *s.planner_, s.planner_->config(),
                                            [&s, on_change = options.on_change] {
                                              if (s.controller_) s.controller_->pods_changed();
                                              if (on_change) on_change();
                                            },
                                            &s.metrics_);
    s.controller_ = std::make_unique<Controller>(
        *s.planner_, *s.feed_, *s.client_, *s.events_, [&s] { return s.leading(); },
        options.controller);
  }
  if (s.controller_ || options.on_change) {
    s.planner_->set_plan_listener([&s, on_change = options.on_change] {
      if (s.controller_) s.controller_->plan_changed();
      if (on_change) on_change();
    });
  }
  VerbOptions verbs;
  verbs.nudges = cluster;  // the watch and the controller's nudges (verbs.h)
  verbs.first_plan_wait = options.first_plan_wait;
  verbs.watch_wait = cluster ? options.watch_wait : std::chrono::milliseconds(0);  // no watch
  if (s.feed_) {
    verbs.watched_job = [&s](const std::string& namespace_name, const std::string& name) {
      return s.feed_->watched_job(namespace_name, name);
    };
  }
  s.verbs_ = std::make_unique<ExtenderVerbs>(*s.planner_, s.binder_.get(), s.metrics_, verbs);
  return service;
}

// create() may give up half-way (a store that cannot be opened leaves even the planner unmade),
// so the destructor and stop() touch only the rooms that exist.
ExtenderService::~ExtenderService() {
  stop();
}

void ExtenderService::start() {
  planner_->start();
  if (feed_) feed_->start();
  if (lease_) lease_->start();
  if (controller_) controller_->start();
}

void ExtenderService::stop() {
  if (lease_) lease_->stop();    // hands the Lease back: one bounded call; no action after it
  if (client_) client_->stop();  // every call in flight ends now
  if (controller_) controller_->stop();  // its workers, their calls ended
  if (feed_) feed_->stop();
  if (planner_) planner_->stop();
}

bool ExtenderService::ready() const {
  return planner_->ready() && (feed_ == nullptr || feed_->synced());
}

bool ExtenderService::busy() const {
  return (feed_ && feed_->busy()) || planner_->busy() || (controller_ && controller_->busy());
}

std::map<std::string, std::string> ExtenderService::observed_pods() const {
  std::map<std::string, std::string> out;
  if (feed_ == nullptr) return out;
  for (const auto& [key, pod] : feed_->pods()) out[key] = pod.resource_version;
  return out;
}

bool ExtenderService::leading() const {
  return lease_ == nullptr || lease_->leading();
}
Expected<FairnessReport> ExtenderService::fairness() const {
  const double now = planner_->now();
  const double window = planner_->config().fairness_window;
  return planner_->read([&](const JobBook& book) { return fairness_report(book, now, window); });
}

QueueView ExtenderService::queue() const {
  double now = planner_->now();
  std::shared_ptr<const Plan> plan = planner_->latest_plan();
  return planner_->read([&](const JobBook& book) { return queue_view(book, *plan, now); });
}

Expected<JobView> ExtenderService::job(const std::string& job_id) const {
  std::shared_ptr<const Plan> plan = planner_->latest_plan();
  double at = planner_->now();
  return planner_->read([&](const JobBook& book) -> Expected<JobView> {
    const BookJob* job = book.job(job_id);
    if (job == nullptr) return Error{"job " + job_id + " is unknown to allox"};
    return job_view(book, *job, *plan, at);
  });
}

}  // namespace allox::extender
