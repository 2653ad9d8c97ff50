// One watch line ({"type": ..., "object": {...}}) decoded in one pass, keeping of the object only
// the members its handler reads.
//
// Why: a watched pod arrives once per change (created, ungated, bound, running, ended, deleted),
// and decoding each into a whole DOM with nlohmann's lexer (one character at a time, every
// member allocated) was a third of the informer's CPU. The line is read by core/json_sax.h
// (RapidJSON's reader, which accepts exactly what nlohmann's strict parser accepts), and values
// are built only for the members a FieldSet keeps: a real pod's managedFields, status of every
// container, volumes and environment are skipped without being built.
//
// Guarantees: what is kept reads exactly as nlohmann's parse of the line would (the same
// numbers, strings, duplicate keys with the last one winning); a line that is not JSON, not an
// object, nested deeper than kMaxWatchNesting, or lacks what a watch event needs gives an error
// naming it, never a crash. Every event keeps object.metadata.name, object.metadata.
// resourceVersion and object.code (an ERROR event's Status code), whatever the FieldSet.
//
// Thread-safe: FieldSet and WatchDecoder are immutable once built; decode is const.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace allox::kube {

// Which members of an object a handler reads: everything (the default), or the dotted paths
// given, each keeping the whole value at its end ("metadata.annotations"). A path walks through
// arrays: "spec.containers.resources" keeps each container's resources. Member names match
// ASCII-case-insensitively, so a reader that matches keys that way (alloxd's pod reader) finds
// everything it would have found; a reader matching exactly finds a subset of that.
class FieldSet {
 public:
  FieldSet() = default;  // everything
  static FieldSet only(std::initializer_list<std::string_view> paths);

  // Adds a path to a set that keeps only some (a set keeping everything stays so).
  void keep(std::string_view path);
  bool everything() const { return everything_; }
  // What is kept of the value under member `name` of an object kept as this; null: dropped.
  const FieldSet* member(std::string_view name) const;

 private:
  friend class WatchDecoder;
  bool everything_ = true;
  std::vector<std::pair<std::string, FieldSet>> members_;
};

// What one watch line says, or an error naming what is wrong with it.
struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kAdded;
  nlohmann::json object;         // the members `fields` keeps
  std::string resource_version;  // of the object; empty for kError
  int error_code = 0;            // kError: the Status code (410: too old)
};

// Kubernetes objects nest a dozen levels deep; a line nested deeper is refused (with room).
inline constexpr int kMaxWatchNesting = 200;

class WatchDecoder {
 public:
  // `object`: what of each event's object to keep (the three members above are added).
  explicit WatchDecoder(FieldSet object = {});
  Expected<WatchEvent> decode(std::string_view line) const;

 private:
  FieldSet line_;  // of the whole line: its type, and its object as given
};

// One line, keeping the whole object.
Expected<WatchEvent> parse_watch_event(std::string_view line);

}  // namespace allox::kube
