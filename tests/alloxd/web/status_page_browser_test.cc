// GET / in a real browser: headless Chromium (Debian package `chromium`) loads the status page
// of a server holding queued and running jobs of two users, renders the DOM and a screenshot;
// the rendered text must show the summary, both users in the share chart, the queue and the
// placements. scripts/install-deps.sh installs Chromium; without it the test fails.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/alloxd/testing/server_fixture.h"

namespace allox::extender {
namespace {

using testing::make_pod;

std::string find_chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

// Runs chromium headless with `action` (--dump-dom or --screenshot=...); returns its stdout.
std::string run_chromium(const std::string& chromium, const std::string& profile,
                         const std::string& action, const std::string& url) {
  std::string command = chromium +
                        " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                        " --disable-background-networking --disable-component-update"
                        " --disable-sync --hide-scrollbars --window-size=1200,900"
                        " --user-data-dir=" +
                        profile + " " + action + " '" + url + "' 2>/dev/null";
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

TEST(StatusPageBrowserTest, ChromiumRendersQueuePlacementsAndShares) {
  std::string chromium = find_chromium();
  ASSERT_FALSE(chromium.empty()) << "chromium is not installed: run scripts/install-deps.sh";

  testing::ServerFixture server({{"gpu-node", {{"gpu", 1}}}, {"cpu-node", {{"cpu", 1}}}});
  auto filter = [&](const std::string& ns, const std::string& name, const std::string& resource) {
    return server.post(
        "/filter",
        testing::filter_body(make_pod(ns, name, resource,
                                      {{"allox.io/time.gpu", "120"}, {"allox.io/time.cpu", "600"}}),
                             {"gpu-node", "cpu-node"}));
  };
  filter("alice", "resnet", "nvidia.com/gpu");
  ASSERT_EQ(200,
            server.post("/bind", R"({"PodName":"resnet","PodNamespace":"alice","Node":"gpu-node"})")
                .status);
  filter("bob", "bert", "cpu");
  ASSERT_EQ(
      200,
      server.post("/bind", R"({"PodName":"bert","PodNamespace":"bob","Node":"cpu-node"})").status);
  filter("bob", "gpt-small", "nvidia.com/gpu");
  server.service().solve_now();

  testing::ScratchDir dir;
  std::string dom =
      run_chromium(chromium, dir.file("profile-dom"), "--dump-dom", server.url() + "/");
  ASSERT_FALSE(dom.empty()) << "chromium produced no DOM";
  for (const char* text : {"allox scheduler status", "Running jobs: 2", "Queued jobs: 1",
                           "Per-user share", "per-user share chart", "alice", "bob", "alice/resnet",
                           "bob/bert", "bob/gpt-small", "gpu-node", "Placements",
                           // the timeline: one row per machine, bars titled job (user, kind),
                           // the queued job at its estimated start, and shares over time
                           "Timeline", "machine timeline", "gpu-node gpu 0", "cpu-node cpu 0",
                           "alice/resnet (alice, running)", "bob/bert (bob, running)",
                           "bob/gpt-small (bob, planned)", "Share over time", "share over time"}) {
    EXPECT_NE(std::string::npos, dom.find(text)) << text;
  }

  std::string png = dir.file("status.png");
  run_chromium(chromium, dir.file("profile-shot"), "--screenshot=" + png, server.url() + "/");
  std::ifstream in(png, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 24u) << "no screenshot";
  EXPECT_EQ(std::string("\x89PNG\r\n\x1a\n", 8), bytes.substr(0, 8));
  auto be32 = [&](std::size_t at) {
    return (static_cast<unsigned char>(bytes[at]) << 24) |
           (static_cast<unsigned char>(bytes[at + 1]) << 16) |
           (static_cast<unsigned char>(bytes[at + 2]) << 8) |
           static_cast<unsigned char>(bytes[at + 3]);
  };
  EXPECT_EQ(1200u, be32(16));  // IHDR width
  EXPECT_EQ(900u, be32(20));   // IHDR height
  // A page with tables and a chart compresses far worse than a blank one (~5 KB).
  EXPECT_GT(bytes.size(), 20000u);
}

}  // namespace
}  // namespace allox::extender
