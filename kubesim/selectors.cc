#include "kubesim/selectors.h"

#include <algorithm>
#include <map>
#include <set>

namespace allox::emulator {
namespace {

using nlohmann::json;

// The field selectors kube-apiserver v1.28 supports per resource (pkg/registry/*/strategy.go).
const std::set<std::string>& supported_fields(const std::string& plural) {
  static const std::map<std::string, std::set<std::string>> fields = {
      {"pods",
       {"metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
        "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
        "status.podIP", "status.nominatedNodeName"}},
      {"nodes", {"metadata.name", "spec.unschedulable"}},
      {"events",
       {"metadata.name", "metadata.namespace", "involvedObject.kind", "involvedObject.namespace",
        "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion",
        "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
        "reportingComponent", "source", "type"}},
  };
  static const std::set<std::string> common = {"metadata.name", "metadata.namespace"};
  auto it = fields.find(plural);
  return it == fields.end() ? common : it->second;
}

std::string trim(const std::string& s) {
  auto begin = s.find_first_not_of(' ');
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(' ') - begin + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;  // commas inside "in (a,b)" do not split terms
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == sep && depth == 0) {
      out.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  out.push_back(current);
  return out;
}

std::string field_value(const json& object, const std::vector<std::string>& path) {
  const json* at = &object;
  for (const std::string& key : path) {
    if (!at->is_object()) return "";
    auto it = at->find(key);
    if (it == at->end()) return "";
    at = &*it;
  }
  if (at->is_string()) return at->get<std::string>();
  if (at->is_boolean()) return at->get<bool>() ? "true" : "false";
  if (at->is_null()) return "";
  return at->dump();
}

}  // namespace

ApiResult<Selector> Selector::parse(const std::string& plural, const std::string& field_selector,
                                    const std::string& label_selector) {
  Selector selector;
  if (!trim(field_selector).empty()) {
    for (const std::string& raw : split(field_selector, ',')) {
      std::string term = trim(raw);
      FieldTerm parsed;
      std::string::size_type at;
      std::size_t op_length = 1;
      if ((at = term.find("!=")) != std::string::npos) {
        parsed.equal = false;
        op_length = 2;
      } else if ((at = term.find("==")) != std::string::npos) {
        op_length = 2;
      } else if ((at = term.find('=')) == std::string::npos) {
        return bad_request("invalid field selector: \"" + term +
                           "\": expected field=value, field==value or field!=value");
      }
      std::string field = trim(term.substr(0, at));
      parsed.value = trim(term.substr(at + op_length));
      if (supported_fields(plural).count(field) == 0) {
        return bad_request("field label not supported: " + field);
      }
      parsed.path = split(field, '.');
      selector.fields_.push_back(std::move(parsed));
    }
  }
  if (!trim(label_selector).empty()) {
    for (const std::string& raw : split(label_selector, ',')) {
      std::string term = trim(raw);
      LabelTerm parsed;
      auto set_op = [&](const std::string& word, LabelTerm::Op op) {
        auto at = term.find(" " + word + " ");
        if (at == std::string::npos) return false;
        parsed.key = trim(term.substr(0, at));
        std::string list = trim(term.substr(at + word.size() + 2));
        if (list.size() < 2 || list.front() != '(' || list.back() != ')') return false;
        for (const std::string& v : split(list.substr(1, list.size() - 2), ','))
          parsed.values.push_back(trim(v));
        parsed.op = op;
        return true;
      };
      if (set_op("notin", LabelTerm::Op::kNotIn) || set_op("in", LabelTerm::Op::kIn)) {
      } else if (auto at = term.find("!="); at != std::string::npos) {
        parsed = {LabelTerm::Op::kNotEqual, trim(term.substr(0, at)), {trim(term.substr(at + 2))}};
      } else if (auto at2 = term.find("=="); at2 != std::string::npos) {
        parsed = {LabelTerm::Op::kEqual, trim(term.substr(0, at2)), {trim(term.substr(at2 + 2))}};
      } else if (auto at3 = term.find('='); at3 != std::string::npos) {
        parsed = {LabelTerm::Op::kEqual, trim(term.substr(0, at3)), {trim(term.substr(at3 + 1))}};
      } else if (!term.empty() && term[0] == '!') {
        parsed = {LabelTerm::Op::kNotExists, trim(term.substr(1)), {}};
      } else {
        parsed = {LabelTerm::Op::kExists, term, {}};
      }
      if (parsed.key.empty() || parsed.key.find_first_of(" ()") != std::string::npos) {
        return bad_request("unable to parse requirement: \"" + term + "\"");
      }
      selector.labels_.push_back(std::move(parsed));
    }
  }
  return selector;
}

bool Selector::matches(const json& object) const {
  for (const FieldTerm& term : fields_) {
    if ((field_value(object, term.path) == term.value) != term.equal) return false;
  }
  if (labels_.empty()) return true;
  const json* labels = nullptr;
  if (auto m = object.find("metadata"); m != object.end() && m->is_object()) {
    if (auto l = m->find("labels"); l != m->end() && l->is_object()) labels = &*l;
  }
  for (const LabelTerm& term : labels_) {
    const json* value = nullptr;
    if (labels != nullptr) {
      if (auto it = labels->find(term.key); it != labels->end() && it->is_string()) value = &*it;
    }
    const std::string text = value != nullptr ? value->get<std::string>() : "";
    const bool in = std::find(term.values.begin(), term.values.end(), text) != term.values.end();
    switch (term.op) {
      case LabelTerm::Op::kEqual:
      case LabelTerm::Op::kIn:
        if (value == nullptr || !in) return false;
        break;
      case LabelTerm::Op::kNotEqual:
      case LabelTerm::Op::kNotIn:
        if (value != nullptr && in) return false;
        break;
      case LabelTerm::Op::kExists:
        if (value == nullptr) return false;
        break;
      case LabelTerm::Op::kNotExists:
        if (value != nullptr) return false;
        break;
    }
  }
  return true;
}

}  // namespace allox::emulator
