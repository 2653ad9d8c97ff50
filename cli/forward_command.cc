// `allox bench` and `allox replay`: the commands that drive alloxd against the kube-scheduler
// emulator live in their own binaries (allox-bench, kubesim) so that allox never links the
// emulator; allox runs the one beside its own executable with the rest of the command line.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit.h"

namespace allox::cli {
namespace {

// Replaces this process with `binary` from allox's own directory, given `leading` and then
// `rest` as arguments. Returns only on failure, having said why.
void exec_beside_allox(const std::string& binary, const std::vector<std::string>& leading,
                       const std::vector<std::string>& rest) {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::filesystem::path path =
      error ? std::filesystem::path(binary) : self.parent_path() / binary;
  std::vector<std::string> words{path.string()};
  words.insert(words.end(), leading.begin(), leading.end());
  words.insert(words.end(), rest.begin(), rest.end());
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  std::cerr << "allox: cannot run " << path.string() << ": " << std::strerror(errno)
            << " (it is built beside allox: cmake --build build --target " << binary << ")\n";
}

void add_forwarded(CLI::App& app, const std::string& name, const std::string& binary,
                   std::vector<std::string> leading, const std::string& description) {
  auto* cmd = app.add_subcommand(name, description + " (runs " + binary + "; its --help lists the options)");
  cmd->set_help_flag();  // --help goes to the binary that has the options
  cmd->prefix_command();
  cmd->callback([cmd, binary, leading] {
    exec_beside_allox(binary, leading, cmd->remaining());
    fail();
  });
}

}  // namespace

void add_bench_command(CLI::App& app) {
  add_forwarded(app, "bench", "allox-bench", {},
                "Benchmarks that print a table of measured figures: cluster, unseen, matcher");
}

void add_replay_command(CLI::App& app) {
  add_forwarded(app, "replay", "kubesim", {"replay"},
                "A fake cluster on this machine with alloxd against it, replaying a trace");
}

}  // namespace allox::cli
