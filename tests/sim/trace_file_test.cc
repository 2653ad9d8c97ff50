#include "sim/trace_file.h"

#include <gtest/gtest.h>

#include <sstream>

namespace allox {
namespace {

TEST(YamlTrace, TimesAreTrueEstimatesOptional) {
  const char* text =
      "users: [{name: alice, weight: 2}]\n"
      "jobs:\n"
      "  - {id: j2, user: bob, arrival: 5, time: {gpu: 10}}\n"
      "  - {id: j1, user: alice, time: {cpu: 97, gpu: 49}, estimate: {gpu: 55}}\n";
  auto t = parse_yaml_trace(text, "t.yaml");
  ASSERT_TRUE(t.ok()) << t.message();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].job.id, "j1");  // sorted by arrival
  EXPECT_DOUBLE_EQ(t->jobs[0].true_time.at("gpu"), 49);
  EXPECT_DOUBLE_EQ(t->jobs[0].job.time.at("gpu"), 55);
  EXPECT_DOUBLE_EQ(t->jobs[0].job.time.at("cpu"), 97);  // no estimate: exact
  ASSERT_EQ(t->users.size(), 2u);
  EXPECT_DOUBLE_EQ(t->users[0].weight, 2);
  EXPECT_EQ(t->users[1].name, "bob");
}

TEST(YamlTrace, ErrorsNameLineAndField) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"jobs:\n  - {id: a, time: {gpu: -1}}\n", "t.yaml:2: job \"a\": time.gpu"},
      {"jobs:\n  - {id: a, time: {gpu: 1}, estimate: {cpu: 2}}\n", "estimate.cpu given"},
      {"jobs:\n  - {id: a, time: {gpu: 1}, colour: red}\n", "colour"},
      {"jobs:\n  - {id: a}\n", "time is required"},
      {"jobs:\n  - {id: a, time: {gpu: 1}}\n  - {id: a, time: {gpu: 1}}\n", "duplicate job id"},
  };
  for (const Case& c : cases) {
    auto t = parse_yaml_trace(c.text, "t.yaml");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.message().find(c.want), std::string::npos) << t.message();
  }
}

// A trace without a job is a mistake (the wrong file, a failed export), refused naming the file,
// line and field rather than simulated as nothing; a list of bad jobs is reported as such.
TEST(YamlTrace, ATraceWithoutJobsIsRefused) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"jobs: []\n", "t.yaml:1: the trace has no jobs: list at least one under jobs"},
      {"users: [{name: a}]\njobs: []\n",
       "t.yaml:2: the trace has no jobs: list at least one under jobs"},
      {"users: [{name: a}]\n", "t.yaml:1: the trace has no jobs: list at least one under jobs"},
      {"{\"users\": [],\n \"jobs\": []}\n",
       "t.yaml:2: the trace has no jobs: list at least one under jobs"},
      {"jobs:\n  - {id: a}\n", "t.yaml:2: job \"a\": time is required (device type -> seconds, "
                              "e.g. {gpu: 60})"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.want, parse_yaml_trace(c.text, "t.yaml").message()) << c.text;
  }
}

TEST(CsvTrace, ATraceWithoutJobsIsRefused) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"", "t.csv:1: the trace is empty: expected a header row, then a row per job"},
      {"# a comment\n\n", "t.csv:2: the trace is empty: expected a header row, then a row per job"},
      {"job,time.gpu\n", "t.csv:1: the trace has no jobs: add a row per job under the header"},
      {"# jobs\njob,time.gpu\n\n# none yet\n",
       "t.csv:2: the trace has no jobs: add a row per job under the header"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.want, parse_csv_trace(c.text, "t.csv").message()) << c.text;
  }
}

TEST(CsvTrace, ParsesColumnsAndEmptyCells) {
  const char* text =
      "# comment\n"
      "job,user,arrival,time.cpu,time.gpu,estimate.gpu\n"
      "j1,alice,0,97,49,55\n"
      "\"j,2\",bob,3,,10,\n";
  auto t = parse_csv_trace(text, "t.csv");
  ASSERT_TRUE(t.ok()) << t.message();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_DOUBLE_EQ(t->jobs[0].job.time.at("gpu"), 55);
  EXPECT_DOUBLE_EQ(t->jobs[0].true_time.at("gpu"), 49);
  EXPECT_EQ(t->jobs[1].job.id, "j,2");
  EXPECT_EQ(t->jobs[1].true_time.count("cpu"), 0u);  // empty cell: cannot run there
  EXPECT_DOUBLE_EQ(t->jobs[1].job.time.at("gpu"), 10);
}

TEST(CsvTrace, ErrorsNameTheLine) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"", "expected a header"},
      {"user,time.gpu\nu,1\n", "'job' column is required"},
      {"job,user\na,u\n", "time.<device>"},
      {"job,time.gpu,speed\na,1,2\n", "unknown column 'speed'"},
      {"job,time.gpu\na,1,2\n", "t.csv:2: expected 2 fields"},
      {"job,time.gpu\na,fast\n", "t.csv:2: time.gpu must be a positive"},
      {"job,arrival,time.gpu\na,-1,1\n", "arrival must be"},
      {"job,time.gpu,time.cpu\na,,\n", "no time.<device>"},
      {"job,time.gpu,estimate.cpu\na,1,2\n", "estimate.cpu given"},
      {"job,time.gpu\n\"a,1\n", "unterminated quote"},
      // Device types as the YAML readers take them: no capitals, blanks or bytes that are not text.
      {"job,time.GPU\na,1\n", "t.csv:1: column 'time.GPU': the device type must be"},
      {"job,time.a b\na,1\n", "column 'time.a b': the device type must be"},
      {"job,time.gpu,estimate.g\xffu\na,1,2\n", "column '(not UTF-8 text)': the device type"},
  };
  for (const Case& c : cases) {
    auto t = parse_csv_trace(c.text, "t.csv");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.message().find(c.want), std::string::npos) << t.message();
  }
}

TEST(CsvTrace, WriteThenReadGivesTheSameTrace) {
  auto t = parse_yaml_trace(
      "jobs:\n"
      "  - {id: a, user: u1, arrival: 0.125, time: {cpu: 97.5, gpu: 49}, estimate: {gpu: 51.3}}\n"
      "  - {id: \"b,\\\"x\\\"\", user: u2, arrival: 7, time: {tpu: 3}}\n"
      "  - {id: \" c \", user: \"u 3 \", arrival: 9, time: {tpu: 4}}\n"  // blank ends
      "  - {id: \"#d\", user: \"#u\", arrival: 10, time: {tpu: 5}}\n",  // not a comment
      "t.yaml");
  ASSERT_TRUE(t.ok()) << t.message();
  std::ostringstream out;
  write_csv_trace(*t, out);
  auto back = parse_csv_trace(out.str(), "back.csv");
  ASSERT_TRUE(back.ok()) << back.message() << "\n" << out.str();
  ASSERT_EQ(back->jobs.size(), t->jobs.size());
  for (std::size_t i = 0; i < t->jobs.size(); ++i) {
    EXPECT_EQ(back->jobs[i].job.id, t->jobs[i].job.id);
    EXPECT_EQ(back->jobs[i].job.user, t->jobs[i].job.user);
    EXPECT_EQ(back->jobs[i].job.arrival, t->jobs[i].job.arrival);
    EXPECT_EQ(back->jobs[i].job.time, t->jobs[i].job.time);
    EXPECT_EQ(back->jobs[i].true_time, t->jobs[i].true_time);
  }
}

TEST(TraceFiles, ExamplesLoad) {
  auto yaml = load_yaml_trace(ALLOX_SOURCE_DIR "/examples/trace.yaml");
  ASSERT_TRUE(yaml.ok()) << yaml.message();
  auto csv = load_csv_trace(ALLOX_SOURCE_DIR "/examples/trace.csv");
  ASSERT_TRUE(csv.ok()) << csv.message();
  EXPECT_FALSE(yaml->jobs.empty());
  EXPECT_FALSE(csv->jobs.empty());
}

// validate_trace holds every trace to the limits a trace file gets (9e12 s), generated ones too.
TEST(TraceCheck, ArrivalsAndTrueTimesPastTheInputLimitAreRefused) {
  Trace trace;
  trace.users.push_back({"u", 1});
  TraceJob tj;
  tj.job.id = "j";
  tj.job.user = "u";
  tj.job.arrival = 1e13;
  tj.job.time["gpu"] = 2e13;  // an estimate may exceed it
  tj.true_time["gpu"] = 5;
  trace.jobs.push_back(tj);
  Status late = validate_trace(trace);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ("trace: job 'j': arrival must be a number of seconds in 0..9e+12, got 1e+13",
            late.message());
  trace.jobs[0].job.arrival = 0;
  EXPECT_TRUE(validate_trace(trace).ok());
  trace.jobs[0].true_time["gpu"] = 1e300;
  Status is_long = validate_trace(trace);
  ASSERT_FALSE(is_long.ok());
  EXPECT_EQ("trace: job 'j': true time on gpu must be in (0, 9e+12] s, got 1e+300",
            is_long.message());
}

}  // namespace
}  // namespace allox
