// allox bench unseen: /filter for a pod alloxd has not seen, as kube-scheduler meets it, against
// /filter for a pod alloxd knows, in one run of the real alloxd.
//
// The cluster: a fake API server with `nodes` nodes of one GPU and one 32-core CPU bundle each,
// every machine taken by a pod bound there (the watch records it running), and `queued` pods
// waiting (GPU and CPU variants of single-variant jobs, 8 users): the setting of docs/results.md
// "/filter against nginx". alloxd lists and watches it; no webhook, so pods are ungated (the
// nudge path, the one where kube-scheduler can ask about a pod before alloxd's watch has it).
//
// Then rounds of three bursts of `burst` /filter calls each, every call naming all nodes (the
// pod as the API server stores it, Go's body shape, HTTP on loopback, `connections` callers):
//   known    a queued pod: in the book and in the plan (the baseline, "any filter");
//   arrival  a new pod created on the fake API server (so alloxd's watch delivers it), then
//            asked about at once: whichever of the watch and the /filter comes first, as in a
//            cluster where both watch the same API server;
//   unseen   a new pod asked about first and created on the API server only after the answer:
//            the /filter always comes before the watch event. (The pod sent carries a UID the
//            bench gives it; the API server assigns its own on create, which alloxd records as
//            the same job's pod changed: one store write off the request path.)
// With `rate` > 0 the calls of a burst start at that many per second (new pods arriving at a
// rate); 0: each caller asks again as soon as it is answered.
//
// Reported per kind: calls, req/s (calls over the bursts' wall time, which for arrival and
// unseen includes the bench's in-process create, tens of microseconds), latency p50/p99/max as
// the caller sees it, and how each was answered: a node kept, "queued: position ..." (from a plan
// that has the job), "waiting for allox's next scheduling round" (a plan without it: the pod
// would be parked until the controller nudges it), or an error. Wall-clock figures on a shared
// machine: read them as under load.
//
// Not thread-safe; one run at a time (it starts a child process and binds loopback ports).
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"

namespace allox::bench {

struct UnseenBenchOptions {
  std::size_t nodes = 100;
  std::size_t queued = 1000;
  std::size_t rounds = 3;
  std::size_t burst = 200;  // calls per kind per round
  std::size_t connections = 1;
  double rate = 0;            // calls per second within a burst; 0: as fast as answered
  std::string alloxd_binary;  // required
  std::string state_dir = "run/bench-unseen";  // alloxd's config, store and log
};

struct FilterFigures {
  std::size_t calls = 0;
  double wall_s = 0;  // the bursts' wall time
  double per_second = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  // How the calls were answered (see the header).
  std::size_t kept = 0, planned = 0, unplanned = 0, errors = 0;
};

struct UnseenBenchResult {
  FilterFigures known, arrival, unseen;
  std::size_t queued_at_end = 0;  // alloxd's queue length after the last burst
  double wall_s = 0;
};

Expected<UnseenBenchResult> run_unseen_bench(const UnseenBenchOptions& options);

}  // namespace allox::bench
