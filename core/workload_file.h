// Loads jobs.yaml (or the same shape in JSON): the users and the jobs to schedule.
//
//   users:                                   # optional; weight defaults to 1
//     - {name: alice, weight: 2}
//   jobs:
//     - {id: j1, user: alice, arrival: 0, time: {cpu: 97, gpu: 49}, iterations: 1000,
//        family: resnet50}
//
// Job keys: id (required, unique), user (default "default"), arrival (seconds >= 0, default 0),
// time (required: device type -> positive seconds, at least one), iterations (optional, >= 1),
// family (optional model family or image, used to predict unprofiled jobs), units (optional,
// 1..kMaxUnits, default 1: devices of one node the job needs at once; its times are on that
// many devices). Users that own jobs
// but are not declared get weight 1. A file without a job is an error unless the caller wants
// its users alone (JobList). Problems are reported with file, line and field.
//
// check_runnable() cross-checks a workload against a cluster: a device type the cluster lacks
// is an error, and so is a job that can run on none of the cluster's machines, or whose units
// are more than any node of its device types offers.
#pragma once

#include <string>

#include "core/model.h"
#include "core/result.h"

namespace allox {

// Whether the file may list no job. A file whose jobs are to be planned, simulated or checked
// must list one (an empty list is a mistake, refused naming the file, line and the jobs field);
// a file read for its users' weights alone (allox report --jobs) need not.
enum class JobList { kRequired, kMayBeEmpty };

Expected<Workload> parse_workload(const std::string& text, const std::string& source,
                                  JobList job_list = JobList::kRequired);
Expected<Workload> load_workload_file(const std::string& path,
                                      JobList job_list = JobList::kRequired);

// `source` names the workload in messages (e.g. its path).
Status check_runnable(const Cluster& cluster, const Workload& workload, const std::string& source);

}  // namespace allox
