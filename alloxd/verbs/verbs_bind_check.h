// /bind's check of one pod (verbs_bind.cc, verbs_gangs.cc): what the bind goes ahead with, or
// why it is refused. Private to the verbs.
#pragma once

#include <cstdint>
#include <string>

#include "alloxd/verbs/verbs.h"

namespace allox::extender {

struct ExtenderVerbs::BindCheck {
  JobVariant variant;
  std::int64_t job_row = 0;
  int preferred_slot = -1;
  std::string refusal;
  bool unknown = false;  // the book does not know the pod: bind_unknown decides
  // A gang's member: the gang's size and planned start (its placements).
  bool gang = false;
  int gang_size = 1;
  PlannedStart start;
};

}  // namespace allox::extender
