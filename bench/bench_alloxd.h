// The real alloxd started for one bench run (allox bench cluster, allox bench unseen): the given
// config as its base, watching a fake API server, with its database (and WAL) started afresh
// and its log under the run's state directory, so no run reads what an earlier one left.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "kubesim/alloxd_process.h"

namespace allox::bench {

struct BenchAlloxd {
  std::string binary;     // path to alloxd
  std::string state_dir;  // holds alloxd.db and alloxd.log
  std::string config;     // alloxd's base config (written by the bench)
  std::string apiserver_url;
  std::string apiserver_token;
  double time_scale = 1;
};

Expected<std::unique_ptr<emulator::AlloxdProcess>> start_bench_alloxd(const BenchAlloxd& run);

}  // namespace allox::bench
