// allox validate FILE...: checks input files and says what is wrong with each, precisely
// (cli/validate/file_check.h).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/validate/file_check.h"
#include "core/input_file.h"

namespace allox::cli {

namespace {

// Reads the file once (a pipe, `<(command)` or /dev/stdin gives its text only once) and says
// what it is, or what is wrong with it.
bool check_file(const std::string& path, const std::string& forced, Checked& checked) {
  auto text = read_input_file(path);
  Expected<std::string> summary =
      text ? check_text(path, *text, forced, checked) : Expected<std::string>(text.error());
  if (!summary) {
    std::cerr << summary.message() << "\n";
    return false;
  }
  std::cout << "ok: " << path << " (" << *summary << ")\n";
  return true;
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "validate",
      "Check cluster and jobs files (YAML or JSON), simulation traces (YAML, CSV, AlloX .txt) and "
      "alloxd configs. With a cluster among them, also check that every job can run on it. Each "
      "file is read once, so a pipe works (<(command), /dev/stdin); its kind comes from --kind, "
      "its extension or its content. Exit status 1 if any file is rejected.");
  auto files = std::make_shared<std::vector<std::string>>();
  auto kind = std::make_shared<std::string>();
  cmd->add_option("files", *files, "files to check")->required();
  cmd->add_option("--kind", *kind, "treat every file as this kind instead of guessing")
      ->check(CLI::IsMember({"cluster", "jobs", "trace", "alloxd"}));
  cmd->callback([files, kind] {
    Checked checked;
    bool all_valid = true;
    for (const std::string& path : *files)
      all_valid = check_file(path, *kind, checked) && all_valid;
    for (const Error& error : check_jobs_runnable(checked)) {
      std::cerr << error.message << "\n";
      all_valid = false;
    }
    if (!all_valid) fail();
  });
}

}  // namespace allox::cli
