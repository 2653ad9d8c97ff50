#include "profiler/throughput_table.h"

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "core/input_file.h"

namespace allox {

std::optional<ThroughputKey> parse_gavel_key(const std::string& key) {
  static const std::regex shape(R"(^\('(.+)',\s*(\d+)\)$)");
  std::smatch m;
  if (!std::regex_match(key, m, shape)) return std::nullopt;
  return ThroughputKey{m[1].str(), std::stoi(m[2].str())};
}

Expected<ThroughputTable> ThroughputTable::load_gavel(const std::string& path) {
  auto text = read_input_file(path);  // the input limit, and no wait on a FIFO
  if (!text) return Error{text.message() + " (throughput table)"};
  return parse_gavel(*text, path);
}

Expected<ThroughputTable> ThroughputTable::parse_gavel(const std::string& json_text,
                                                       const std::string& origin) {
  nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{origin + ": not valid JSON"};
  if (!doc.is_object()) return Error{origin + ": expected an object of device types"};
  ThroughputTable table;
  for (const auto& [device, configs] : doc.items()) {
    if (!configs.is_object()) return Error{origin + ": " + device + ": expected an object"};
    for (const auto& [name, entry] : configs.items()) {
      std::optional<ThroughputKey> key = parse_gavel_key(name);
      if (!key) {
        return Error{origin + ": " + device + ": key \"" + name +
                     "\" is not of the form \"('<model> (batch size B)', S)\""};
      }
      auto isolated = entry.find("null");
      if (isolated == entry.end() || !isolated->is_number()) {
        return Error{origin + ": " + device + ": " + name + ": missing numeric \"null\" entry"};
      }
      double rate = isolated->get<double>();
      if (rate < 0) return Error{origin + ": " + device + ": " + name + ": negative throughput"};
      if (rate > 0) table.rates_[*key][device] = rate;
    }
  }
  return table;
}

std::optional<double> ThroughputTable::steps_per_second(const ThroughputKey& key,
                                                        const DeviceType& device) const {
  auto it = rates_.find(key);
  if (it == rates_.end()) return std::nullopt;
  auto rate = it->second.find(device);
  if (rate == it->second.end()) return std::nullopt;
  return rate->second;
}

std::optional<double> ThroughputTable::job_time(const ThroughputKey& key, const DeviceType& device,
                                                double iterations) const {
  std::optional<double> rate = steps_per_second(key, device);
  if (!rate) return std::nullopt;
  return iterations / *rate;
}

std::vector<ThroughputKey> ThroughputTable::keys() const {
  std::vector<ThroughputKey> out;
  for (const auto& [key, rates] : rates_) out.push_back(key);
  return out;
}

std::vector<DeviceType> ThroughputTable::devices() const {
  std::set<DeviceType> out;
  for (const auto& [key, rates] : rates_) {
    for (const auto& [device, rate] : rates) out.insert(device);
  }
  return {out.begin(), out.end()};
}

}  // namespace allox
