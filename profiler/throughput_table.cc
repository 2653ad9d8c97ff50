#include "profiler/throughput_table.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/input_file.h"

namespace allox {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// At most 60 bytes of `key`, cut at a UTF-8 character boundary, for messages.
std::string key_in_message(const std::string& key) {
  constexpr std::size_t kShown = 60;
  if (key.size() <= kShown) return "\"" + key + "\"";
  std::size_t cut = kShown;
  while (cut > 0 && (static_cast<unsigned char>(key[cut]) & 0xC0) == 0x80) --cut;
  return "\"" + key.substr(0, cut) + "...\" (" + std::to_string(key.size()) + " bytes)";
}

}  // namespace

Expected<ThroughputKey> parse_gavel_key(const std::string& key) {
  const Error shape{"key " + key_in_message(key) +
                    " is not of the form \"('<model> (batch size B)', S)\""};
  // From the end: ')', the digits of S, blanks, then "',"; the model is what lies between
  // the opening "('" and that quote (it may hold quotes and commas of its own).
  if (key.size() < 2 || key.compare(0, 2, "('") != 0 || key.back() != ')') return shape;
  std::size_t end = key.size() - 1;  // one past S's last digit
  std::size_t begin = end;
  while (begin > 2 && is_digit(key[begin - 1])) --begin;
  if (begin == end) return shape;
  std::size_t comma = begin;
  while (comma > 2 && is_space(key[comma - 1])) --comma;
  // The model is non-empty: "('" + at least one byte + "',".
  if (comma < 5 || key[comma - 1] != ',' || key[comma - 2] != '\'') return shape;
  int scale = 0;
  const auto [ptr, ec] = std::from_chars(key.data() + begin, key.data() + end, scale);
  if (ec != std::errc() || ptr != key.data() + end || scale < 1 || scale > kMaxUnits) {
    return Error{"key " + key_in_message(key) + ": the scale factor must be 1.." +
                 std::to_string(kMaxUnits) + " machines, got " +
                 (end - begin > 20 ? key.substr(begin, 20) + "..." : key.substr(begin, end - begin))};
  }
  return ThroughputKey{key.substr(2, comma - 2 - 2), scale};
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
      Expected<ThroughputKey> key = parse_gavel_key(name);
      if (!key) return Error{origin + ": " + device + ": " + key.message()};
      auto isolated = entry.find("null");
      if (isolated == entry.end() || !isolated->is_number()) {
        return Error{origin + ": " + device + ": " + key_in_message(name) + ": missing numeric \"null\" entry"};
      }
      double rate = isolated->get<double>();
      if (rate < 0) return Error{origin + ": " + device + ": " + key_in_message(name) + ": negative throughput"};
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
