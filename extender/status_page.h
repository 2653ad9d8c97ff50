// GET / : a self-contained HTML page for people (no scripts, no external assets) showing the
// cluster summary, per-user shares as a bar chart (inline SVG), the queue in plan order with
// each job's estimates and expected start, and the current placements. It refreshes itself
// every 5 seconds. Thread-safe: pure.
#pragma once

#include <string>

#include "extender/reports.h"

namespace allox::extender {

std::string render_status_page(const QueueView& queue, const FairnessReport& fairness);

}  // namespace allox::extender
