#include "alloxd/store/job_state.h"

namespace allox::extender {

const char* phase_name(JobPhase phase) {
  switch (phase) {
    case JobPhase::kQueued:
      return "queued";
    case JobPhase::kRunning:
      return "running";
    case JobPhase::kDone:
      return "done";
    case JobPhase::kRemoved:
      return "removed";
  }
  return "queued";
}

}  // namespace allox::extender
