// A Gantt chart of a simulated schedule as a standalone SVG: one row per machine, one bar per
// job (coloured by user, labelled with the job id when it fits), a grey bar for a machine's
// initial busy period, a time axis and a legend. A preempted job shows its final run only.
// Plain text output; no external tools.
#pragma once

#include <ostream>
#include <string>

#include "core/model.h"
#include "sim/simulator.h"

namespace allox {

// Precondition: `result` came from simulate() on `cluster`.
void write_gantt_svg(const SimResult& result, const Cluster& cluster, const std::string& title,
                     std::ostream& out);

}  // namespace allox
