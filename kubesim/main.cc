// kubesim: a fake Kubernetes cluster on this machine (fake API server, kube-scheduler emulator,
// kubelets) for replays and demos (README.md). `allox replay` runs `kubesim replay`.
#include <CLI/CLI.hpp>

#include "kubesim/replay_command.h"

int main(int argc, char** argv) {
  CLI::App app{"kubesim: a fake Kubernetes cluster on this machine, with alloxd against it"};
  app.require_subcommand(1);
  allox::cli::add_replay_command(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
