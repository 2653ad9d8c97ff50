// Which class alloxd's request threads run in (config `request_threads`, thread_priority.h
// RequestClass): the I/O threads that answer kube-scheduler's /filter, /prioritize and /bind on
// the extender listener.
//
//   normal    (the default) never real-time.
//   auto      real-time when the kernel grants it (CAP_SYS_NICE or an RLIMIT_RTPRIO) and the
//             listener is on loopback, so only processes of the pod's own network namespace
//             (kube-scheduler) can make those threads run; normal otherwise, with the reason.
//   realtime  real-time whatever the listener, when granted (normal with the reason if not).
//
// Why an operator may opt in: on a machine whose cores are busy, each end of the /filter round
// trip waits for a core when it wakes. In the normal class that wait has a p99 of several ms
// whatever alloxd does (bench/wakeup_floor.cc, docs/performance.md); a real-time thread gets a
// core the moment it wakes. The risk: a real-time thread busy with one expensive request holds
// its core against every normal process on the node until the kernel's cap (95% of each
// second). The default stays normal because the shipped kube-scheduler is normal too, and the
// grant needs a capability that PodSecurity `baseline` refuses (manifests/realtime/).
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"
#include "core/thread_priority.h"

namespace allox::extender {

enum class RequestThreads { kAuto, kNormal, kRealtime };

// "auto", "normal", "realtime"; an error listing them otherwise.
Expected<RequestThreads> parse_request_threads(std::string_view text);
const char* request_threads_name(RequestThreads threads);

// True for an address only the local host can reach: 127.0.0.0/8, ::1, "localhost".
bool is_loopback_host(std::string_view host);

struct RequestClassChoice {
  RequestClass chosen = RequestClass::kNormal;
  std::string reason;  // one sentence for the log: why this class
};

// The class for `wanted` given the extender listener's host and whether the kernel grants
// real-time (thread_priority.h realtime_granted()). A pure decision: alloxd applies it with
// set_request_class() before it starts its threads.
RequestClassChoice choose_request_class(RequestThreads wanted, std::string_view listen_host,
                                        const Status& realtime);

}  // namespace allox::extender
