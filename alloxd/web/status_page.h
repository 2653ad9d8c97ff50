// GET / : a self-contained HTML page for people (no scripts, no external assets) showing the
// cluster summary, per-user shares as a bar chart (inline SVG), a timeline of each machine's
// jobs over the last hours coloured by user with the plan's next starts, each user's share over
// time, the queue in plan order with each job's estimates and expected start, and the current
// placements. It refreshes itself every 5 seconds. Each list (users, queued jobs, placements)
// shows its first 100 rows, the totals in the summary, and says how many more there are with a
// link to the paged JSON; the share chart draws the users with the largest shares
// (timeline.h). So its size is bounded by the cluster, not by the number of users or jobs.
// Thread-safe: pure.
#pragma once

#include <string>

#include "alloxd/web/reports.h"
#include "alloxd/web/timeline.h"

namespace allox::extender {

std::string render_status_page(const QueueView& queue, const FairnessReport& fairness,
                               const Timeline& timeline = {});

}  // namespace allox::extender
