#include "fairness/drf_share.h"

#include <algorithm>

namespace allox {

void DrfHoldings::add(const Job& job, const DeviceType& device) {
  const auto units = static_cast<std::size_t>(job.units);
  machines_[device] += units;
  if (capacity_->empty()) return;
  const auto stated = job.holds.find(device);
  const auto offered = capacity_->find(device);
  const ResourceAmounts* amounts = stated != job.holds.end()     ? &stated->second
                                   : offered != capacity_->end() ? &offered->second
                                                                 : nullptr;
  if (amounts == nullptr) return;
  for (const auto& [resource, amount] : *amounts) {
    held_[resource] += amount * static_cast<double>(units);
  }
}

double DrfHoldings::dominant_share() const {
  double share = 0;
  if (capacity_->empty()) {
    for (const auto& [device, n] : machines_) {
      const auto count = counts_->find(device);
      if (count == counts_->end() || count->second == 0) continue;
      share = std::max(share, static_cast<double>(n) / static_cast<double>(count->second));
    }
    return share;
  }
  ResourceAmounts total;
  for (const auto& [device, offer] : *capacity_) {
    const auto count = counts_->find(device);
    if (count == counts_->end()) continue;
    for (const auto& [resource, amount] : offer) {
      total[resource] += amount * static_cast<double>(count->second);
    }
  }
  for (const auto& [resource, amount] : held_) {
    const auto it = total.find(resource);
    if (it == total.end() || it->second <= 0) continue;
    share = std::max(share, amount / it->second);
  }
  return share;
}

MachineCapacity smallest_fitting_machines(const std::vector<const Job*>& jobs) {
  MachineCapacity capacity;
  for (const Job* job : jobs) {
    for (const auto& [device, amounts] : job->holds) {
      ResourceAmounts& offer = capacity[device];
      for (const auto& [resource, amount] : amounts) {
        offer[resource] = std::max(offer[resource], amount);
      }
    }
  }
  return capacity;
}

}  // namespace allox
