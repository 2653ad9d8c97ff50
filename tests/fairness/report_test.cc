#include "fairness/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "fairness/jobs_csv.h"

namespace allox {
namespace {

// Two GPUs and two CPU nodes, reported at t = 200 with a 100 s window.
ReportInput two_users() {
  ReportInput in;
  in.machines = {{"gpu", 2}, {"cpu", 2}};
  in.now = 200;
  in.window = 100;
  in.jobs = {
      {"a1", "alice", 0, 0.0, 50.0, "gpu", "gpu-0", 50.0, {}},
      {"a2", "alice", 100, 150.0, 190.0, "gpu", "gpu-0", 40.0, {}},
      {"a3", "alice", 120, 180.0, std::nullopt, "cpu", "cpu-0", std::nullopt, {}},
      {"b1", "bob", 10, 10.0, 160.0, "gpu", "gpu-1", std::nullopt, {}},
      {"b2", "bob", 150, std::nullopt, std::nullopt, "", "", std::nullopt, {}},
      {"b3", "bob", 250, std::nullopt, std::nullopt, "", "", std::nullopt, {}},  // after now
  };
  return in;
}

TEST(ReportTest, HandComputedPerUserFigures) {
  auto report = make_report(two_users());
  ASSERT_TRUE(report.ok()) << report.message();
  ASSERT_EQ(2u, report->users.size());
  const UserReport& alice = report->users[0];
  const UserReport& bob = report->users[1];
  EXPECT_EQ("alice", alice.user);
  // alice holds one of two CPU nodes at t = 200.
  EXPECT_DOUBLE_EQ(0.5, alice.current_share);
  EXPECT_DOUBLE_EQ(0, bob.current_share);
  // Window [100, 200]: alice GPU 40 s / 200 = 0.2, CPU 20 s / 200 = 0.1; bob GPU 60 s / 200.
  EXPECT_DOUBLE_EQ(0.2, alice.windowed_share);
  EXPECT_DOUBLE_EQ(0.3, bob.windowed_share);
  EXPECT_EQ(0u, alice.queued);
  EXPECT_EQ(1u, alice.running);
  EXPECT_EQ(2u, alice.done);
  EXPECT_EQ(1u, bob.queued);  // b3 arrives after the report time
  EXPECT_DOUBLE_EQ(70, *alice.mean_jct);
  EXPECT_DOUBLE_EQ(150, *bob.mean_jct);
  // Slices: half of each type, at least one whole machine: isolated = run time. a2: 90 / 40.
  EXPECT_DOUBLE_EQ(2.25, *alice.worst_rho);
  EXPECT_EQ("a2", alice.worst_rho_job);
  EXPECT_DOUBLE_EQ(1, *bob.worst_rho);  // b1 ran at once; run time from finish - start
  EXPECT_DOUBLE_EQ(0.25 / 0.26, report->jain_windowed_share);
  EXPECT_EQ(3u, report->done);
  EXPECT_NEAR(290.0 / 3, *report->mean_jct, 1e-12);
}

TEST(ReportTest, WeightsScaleSharesAndSlices) {
  ReportInput in = two_users();
  in.users = {{"alice", 3}};
  auto report = make_report(in);
  ASSERT_TRUE(report.ok()) << report.message();
  EXPECT_DOUBLE_EQ(0.5 / 3, report->users[0].current_share);
  // bob's slice is 1/4 of 2 GPUs = half a GPU: b1 alone would take 300 s; JCT 150.
  EXPECT_DOUBLE_EQ(0.5, *report->users[1].worst_rho);
}

// The current share is AlloX's L (fairness/share.h): summed over running jobs, a job counting its
// fastest device type's share, scaled by p_fast / p_actual; without times, its own type's.
TEST(ReportTest, CurrentShareIsLSummedOverRunningJobs) {
  ReportInput in;
  in.machines = {{"gpu", 2}, {"cpu", 4}};
  in.now = 100;
  in.jobs = {{"x1", "alice", 0, 0.0, std::nullopt, "cpu", "cpu-0", std::nullopt, {}},
             {"x2", "alice", 0, 0.0, std::nullopt, "gpu", "gpu-0", std::nullopt, {}}};
  auto without_times = make_report(in);
  ASSERT_TRUE(without_times.ok()) << without_times.message();
  EXPECT_DOUBLE_EQ(1.0 / 4 + 1.0 / 2, without_times->users[0].current_share);
  in.jobs[0].times = {{"gpu", 10}, {"cpu", 40}};
  auto with_times = make_report(in);
  ASSERT_TRUE(with_times.ok()) << with_times.message();
  EXPECT_DOUBLE_EQ(1.0 / 2 * 10 / 40 + 1.0 / 2, with_times->users[0].current_share);
}

TEST(ReportTest, InconsistentRecordsAreErrorsNamingTheJob) {
  ReportInput in = two_users();
  in.jobs[0].finish = -1;
  auto report = make_report(in);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(std::string::npos, report.message().find("a1"));
  in = two_users();
  in.machines.erase("cpu");
  EXPECT_NE(std::string::npos, make_report(in).message().find("a3"));
}

TEST(ReportTest, JsonAndTableCarryTheFigures) {
  auto report = make_report(two_users());
  ASSERT_TRUE(report.ok());
  auto doc = nlohmann::json::parse(report_json(*report));
  EXPECT_EQ(2u, doc["users"].size());
  EXPECT_EQ("bob", doc["users"][1]["user"]);
  EXPECT_DOUBLE_EQ(0.3, doc["users"][1]["windowed_share"].get<double>());
  EXPECT_EQ(1, doc["queued"].get<int>());
  std::ostringstream table;
  write_report_table(*report, table);
  EXPECT_NE(std::string::npos, table.str().find("alice")) << table.str();
  EXPECT_NE(std::string::npos, table.str().find("2.25")) << table.str();
}

TEST(JobsCsvTest, ReadsTheSimulatorsColumnsInAnyOrder) {
  std::istringstream csv(
      "job,user,arrival,start,finish,device,machine,estimated_time,true_time\n"
      "j1,alice,0,5,55,gpu,gpu-0,60,50\n"
      "\"j,2\",bob,10,,,,,,\n");
  auto jobs = read_jobs_csv(csv, "jobs.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.message();
  ASSERT_EQ(2u, jobs->size());
  EXPECT_EQ("j1", (*jobs)[0].job);
  EXPECT_EQ(5, *(*jobs)[0].start);
  EXPECT_EQ(50, *(*jobs)[0].run_time);
  EXPECT_EQ("j,2", (*jobs)[1].job);
  EXPECT_FALSE((*jobs)[1].start);
  EXPECT_EQ((std::map<DeviceType, std::size_t>{{"gpu", 1}}), machines_seen(*jobs));

  std::istringstream reordered("user,job,machine,device,finish,start,arrival\nu,j,m,cpu,3,2,1\n");
  auto other = read_jobs_csv(reordered, "x.csv");
  ASSERT_TRUE(other.ok()) << other.message();
  EXPECT_EQ(3, *(*other)[0].finish);
  EXPECT_FALSE((*other)[0].run_time);
}

TEST(JobsCsvTest, ErrorsNameLineAndColumn) {
  std::istringstream missing("job,user,arrival\n");
  EXPECT_NE(std::string::npos, read_jobs_csv(missing, "a.csv").message().find("'start'"));
  std::istringstream bad(
      "job,user,arrival,start,finish,device,machine\n"
      "j1,u,0,1,2,gpu,g\n"
      "j2,u,zero,1,2,gpu,g\n");
  auto jobs = read_jobs_csv(bad, "b.csv");
  ASSERT_FALSE(jobs.ok());
  EXPECT_NE(std::string::npos, jobs.message().find("b.csv:3: arrival")) << jobs.message();
  std::istringstream ragged("job,user,arrival,start,finish,device,machine\nj1,u,0\n");
  EXPECT_NE(std::string::npos, read_jobs_csv(ragged, "c.csv").message().find("c.csv:2"));
}

TEST(JobsCsvTest, AbsurdRowsAreRefusedNamingTheField) {
  const std::string header = "job,user,arrival,start,finish,device,machine\n";
  struct Case {
    const char* row;
    const char* error;
  };
  const Case cases[] = {
      {"j1,u,-5,1,2,gpu,g", "d.csv:2: arrival: expected seconds in 0..9e+12, got '-5'"},
      {"j1,u,0,1e308,1.7e308,gpu,g", "d.csv:2: start: expected seconds in 0..9e+12, got '1e308'"},
      {"j1,u,0,1,2e13,gpu,g", "d.csv:2: finish: expected seconds in 0..9e+12, got '2e13'"},
      {",u,0,1,2,gpu,g", "d.csv:2: job: required"},
      {"j1,,0,1,2,gpu,g", "d.csv:2: user: required"},
      {"j1,u,0,1,2,gpu,", "d.csv:2: machine: required for a job that started"},
      {"j1,u,0,1,2,,g", "d.csv:2: device: required for a job that started"},
  };
  for (const Case& c : cases) {
    std::istringstream csv(header + c.row + "\n");
    auto jobs = read_jobs_csv(csv, "d.csv");
    EXPECT_FALSE(jobs.ok()) << c.row;
    EXPECT_EQ(c.error, jobs.message()) << c.row;
  }
  std::istringstream twice(header + "j1,u,0,1,2,gpu,g\nj2,u,0,,,,\nj1,v,3,4,5,gpu,g\n");
  EXPECT_EQ("d.csv:4: job: 'j1' is already on line 2", read_jobs_csv(twice, "d.csv").message());
  // At the bound, and a job that never started with neither device nor machine, are valid.
  std::istringstream edge(header + "j1,u,0,9e12,9e12,gpu,g\nj2,u,0,,,,\n");
  auto jobs = read_jobs_csv(edge, "d.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.message();
  EXPECT_EQ(2u, jobs->size());
}

}  // namespace
}  // namespace allox
