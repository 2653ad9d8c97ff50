// The wire types' own behaviour: a node list kept as one buffer of names, the failed nodes'
// reasons stored once per distinct reason.
#include "extender_api/wire.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace allox::extender {

bool NodeReasons::operator==(const NodeReasons& other) const {
  auto mine = sorted();
  auto theirs = other.sorted();
  return std::equal(
      mine.begin(), mine.end(), theirs.begin(), theirs.end(),
      [](const Entry& a, const Entry& b) { return a.node == b.node && a.reason == b.reason; });
}

const NodeNameList& ExtenderArgs::candidates() const {
  static const NodeNameList kNone;
  if (node_objects) return node_object_names;
  return node_names ? *node_names : kNone;
}

NodeNameList::NodeNameList(std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) push_back(name);
}

void NodeNameList::push_back(std::string_view name) {
  text_.append(name);
  ends_.push_back(text_.size());
}

void NodeNameList::reserve(std::size_t names, std::size_t bytes) {
  ends_.reserve(names);
  text_.reserve(bytes);
}

bool NodeNameList::contains(std::string_view name) const {
  for (std::string_view n : *this) {
    if (n == name) return true;
  }
  return false;
}

std::vector<std::string> NodeNameList::strings() const {
  return std::vector<std::string>(begin(), end());
}

NodeReasons::NodeReasons(
    std::initializer_list<std::pair<std::string_view, std::string_view>> entries) {
  for (const auto& [node, why] : entries) add(node, why);
}

NodeReasons::Reason NodeReasons::reason(std::string text) {
  reasons_.push_back(std::move(text));
  return static_cast<Reason>(reasons_.size() - 1);
}

void NodeReasons::add(std::string_view node, Reason why) {
  names_.append(node);
  entries_.push_back({names_.size(), why});
}

void NodeReasons::add(std::string_view node, std::string_view why) {
  if (reasons_.empty() || reasons_.back() != why) reason(std::string(why));
  add(node, static_cast<Reason>(reasons_.size() - 1));
}

bool NodeReasons::contains(std::string_view node) const {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (name(i) == node) return true;
  }
  return false;
}

std::string_view NodeReasons::at(std::string_view node) const {
  for (std::size_t i = entries_.size(); i-- > 0;) {
    if (name(i) == node) return reasons_[entries_[i].reason];
  }
  throw std::out_of_range("NodeReasons::at: no node " + std::string(node));
}

std::vector<NodeReasons::Entry> NodeReasons::sorted() const {
  std::vector<Entry> out;
  out.reserve(entries_.size());
  bool in_order = true;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    out.push_back((*this)[i]);
    in_order = in_order && (i == 0 || out[i - 1].node < out[i].node);
  }
  if (in_order) return out;  // kube-scheduler often sends names in order: nothing to sort
  // Stable, so among repeats of a node the last added comes last and is the one kept.
  std::stable_sort(out.begin(), out.end(),
                   [](const Entry& a, const Entry& b) { return a.node < b.node; });
  std::size_t kept = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i + 1 < out.size() && out[i + 1].node == out[i].node) continue;
    out[kept++] = out[i];
  }
  out.resize(kept);
  return out;
}

}  // namespace allox::extender
