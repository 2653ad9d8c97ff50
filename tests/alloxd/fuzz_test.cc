// Mutation fuzzing over HTTP: 2,400 bodies derived from the golden files (byte edits and
// structural edits: wrong types, dropped keys, folded key case, truncation) go to the four
// extender verbs. The server must answer every one (no crash, no hang): 200, or 400 with a JSON
// error message; and a rejected request must leave the job book exactly as it was.
#include <gtest/gtest.h>

#include <random>

#include "tests/alloxd/testing/golden.h"
#include "tests/alloxd/testing/server_fixture.h"

namespace allox::extender {
namespace {

using nlohmann::json;

// What a rejected request must not change: every job's id, phase and placement, and variants.
std::string book_digest(ExtenderService& service) {
  QueueView view = service.queue();
  std::string digest;
  for (const auto* list : {&view.queued, &view.running}) {
    for (const JobView& job : *list) {
      digest += job.record.id + "|" + phase_name(job.record.phase) + "|" + job.record.node + "|" +
                std::to_string(job.variants.size()) + ";";
    }
  }
  return digest;
}

class Mutator {
 public:
  explicit Mutator(std::uint32_t seed) : random_(seed) {}

  std::string mutate(const std::string& body) {
    switch (pick(8)) {
      case 0:
        return flip_bytes(body);
      case 1:
        return body.substr(0, pick(body.size() + 1));  // truncation
      case 2:
        return insert_bytes(body);
      case 3:
        return delete_range(body);
      default:
        return structural(body);
    }
  }

 private:
  std::size_t pick(std::size_t n) { return n == 0 ? 0 : random_() % n; }

  std::string flip_bytes(std::string s) {
    for (std::size_t i = 0, n = 1 + pick(4); i < n && !s.empty(); ++i) {
      s[pick(s.size())] = static_cast<char>(random_() % 256);
    }
    return s;
  }
  std::string insert_bytes(std::string s) {
    static const std::string tokens[] = {"{",       "}",    "[",    "]",           ",",
                                         ":",       "\"",   "null", "1e999",       "-0",
                                         "\\u0000", "\xff", "true", "{\"Pod\":{}}"};
    s.insert(pick(s.size() + 1), tokens[pick(std::size(tokens))]);
    return s;
  }
  std::string delete_range(std::string s) {
    if (s.empty()) return s;
    std::size_t at = pick(s.size());
    return s.erase(at, 1 + pick(std::min<std::size_t>(20, s.size() - at)));
  }

  // Replace, drop or re-case one value somewhere in the document.
  std::string structural(const std::string& body) {
    json doc = json::parse(body, nullptr, false);
    if (doc.is_discarded()) return flip_bytes(body);
    std::vector<json*> nodes;
    collect(doc, nodes);
    json* target = nodes[pick(nodes.size())];
    static const json replacements[] = {nullptr,
                                        7,
                                        -1,
                                        3.5,
                                        "text",
                                        true,
                                        json::array(),
                                        json::object(),
                                        json::array({1, "x", nullptr}),
                                        json::object({{"metadata", 5}})};
    switch (pick(3)) {
      case 0:
        *target = replacements[pick(std::size(replacements))];
        break;
      case 1:
        if (target->is_object() && !target->empty()) {
          auto it = target->begin();
          std::advance(it, static_cast<long>(pick(target->size())));
          target->erase(it.key());
        }
        break;
      default:
        if (target->is_object() && !target->empty()) {
          json folded = json::object();
          for (auto& [key, value] : target->items()) {
            std::string k = key;
            for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            folded[k] = value;
          }
          *target = folded;
        }
    }
    return doc.dump();
  }

  static void collect(json& node, std::vector<json*>& out) {
    out.push_back(&node);
    if (node.is_object() || node.is_array()) {
      for (auto& child : node) collect(child, out);
    }
  }

  std::mt19937 random_;
};

TEST(FuzzTest, MutatedGoldenBodiesNeverCrashHangOrChangeStateWhenRejected) {
  testing::ServerFixture server(
      {{"gpu-node-1", {{"gpu", 4}}}, {"gpu-node-2", {{"gpu", 4}}}, {"cpu-node-1", {{"cpu", 2}}}});
  struct Seed {
    std::string path;
    std::string body;
  };
  std::vector<Seed> seeds;
  for (const auto& message : testing::golden_messages()) {
    switch (message.kind) {
      case testing::GoldenKind::kExtenderArgs:
        seeds.push_back({"/filter", message.body});
        seeds.push_back({"/prioritize", message.body});
        break;
      case testing::GoldenKind::kBindingArgs:
        seeds.push_back({"/bind", message.body});
        break;
      case testing::GoldenKind::kPreemptionArgs:
        seeds.push_back({"/preempt", message.body});
        break;
      default:
        break;
    }
  }
  ASSERT_GE(seeds.size(), 6u);

  Mutator mutator(20261122);
  int accepted = 0, rejected = 0;
  constexpr int kBodies = 2400;
  for (int i = 0; i < kBodies; ++i) {
    const Seed& seed = seeds[static_cast<std::size_t>(i) % seeds.size()];
    std::string body = mutator.mutate(seed.body);
    std::string before = book_digest(server.service());
    auto reply = server.post(seed.path, body);
    ASSERT_NE(0, reply.status) << "no answer (crash or hang) for " << seed.path << " " << body;
    if (reply.status == 200) {
      ++accepted;
      continue;
    }
    ASSERT_EQ(400, reply.status) << seed.path << " " << body << " -> " << reply.body;
    ++rejected;
    auto error = json::parse(reply.body, nullptr, false);
    ASSERT_TRUE(error.is_object() && error["error"].is_string() &&
                !error["error"].get<std::string>().empty())
        << reply.body;
    ASSERT_EQ(before, book_digest(server.service())) << "rejected body changed state: " << body;
  }
  // Both paths must be exercised for the test to mean anything.
  EXPECT_GT(accepted, 100);
  EXPECT_GT(rejected, 500);
  EXPECT_EQ(200, server.get("/healthz").status);
  EXPECT_EQ(200, server.get("/readyz").status);
}

}  // namespace
}  // namespace allox::extender
