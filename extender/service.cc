#include "extender/service.h"

namespace allox::extender {

Expected<std::unique_ptr<ExtenderService>> ExtenderService::create(
    const ExtenderConfig& config, std::unique_ptr<SchedulingPolicy> policy,
    std::unique_ptr<ClusterApi> api, ServiceOptions options) {
  std::unique_ptr<ExtenderService> service(new ExtenderService());
  const bool from_api = config.apiserver && api != nullptr;
  PlannerOptions planner_options;
  planner_options.clock = std::move(options.clock);
  if (!from_api) planner_options.inventory = config.nodes;
  auto planner =
      Planner::create(config, std::move(policy), service->metrics_, std::move(planner_options));
  if (!planner) return planner.error();
  service->api_ = std::move(api);
  service->planner_ = std::move(*planner);
  service->verbs_ =
      std::make_unique<ExtenderVerbs>(*service->planner_, service->api_.get(), service->metrics_,
                                      VerbOptions{options.first_plan_wait});
  if (from_api) {
    auto tick = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(config.tick));
    service->poller_ = std::make_unique<ClusterPoller>(*service->planner_, *service->api_, tick);
  }
  return service;
}

ExtenderService::~ExtenderService() {
  stop();
}

void ExtenderService::start() {
  planner_->start();
  if (poller_) poller_->start();
}

void ExtenderService::stop() {
  if (poller_) poller_->stop();
  planner_->stop();
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
