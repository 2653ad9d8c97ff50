// Reading input files: size limits are enforced before reading, and problems name the path.
#include "core/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/cluster_file.h"
#include "core/workload_file.h"

namespace allox {
namespace {

namespace fs = std::filesystem;

class InputFileTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("allox-input-" +
            std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  fs::path dir_;
};

TEST_F(InputFileTest, RefusesA100MegabyteFileWithoutReadingIt) {
  const std::string path = (dir_ / "huge.yaml").string();
  { std::ofstream touch(path); }
  fs::resize_file(path, 100u << 20);  // sparse: no 100 MB written, none read
  auto text = read_input_file(path);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(path + ": file is 100.0 MiB, over the 32.0 MiB limit for input files", text.message());
  auto cluster = load_cluster_file(path);
  EXPECT_EQ(text.message(), cluster.message());
}

TEST_F(InputFileTest, EnforcesTheLimitOnStreamsToo) {
  const std::string path = write("small.yaml", std::string(2000, 'x'));
  auto text = read_input_file(path, 1000);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(path + ": file is 2000 bytes, over the 1000 bytes limit for input files",
            text.message());
  EXPECT_EQ(std::string(2000, 'x'), read_input_file(path, 2000).value());
}

// A service's own files (its config, a token) must be regular files: a FIFO is refused at once
// instead of blocking until some writer opens it, and devices are named as such.
TEST_F(InputFileTest, RegularFilesOnlyAndAFifoNeverBlocks) {
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(0, ::mkfifo(fifo.c_str(), 0600));
  EXPECT_EQ(fifo + ": is a FIFO, expected a regular file", read_regular_file(fifo).message());
  EXPECT_EQ(dir_.string() + ": is a directory, expected a regular file",
            read_regular_file(dir_.string()).message());
  EXPECT_EQ("/dev/null: is a character device, expected a regular file",
            read_regular_file("/dev/null").message());
  EXPECT_EQ((dir_ / "nope").string() + ": no such file",
            read_regular_file((dir_ / "nope").string()).message());
  const std::string text = write("ok.yaml", "tick: 5\n");
  EXPECT_EQ("tick: 5\n", read_regular_file(text).value());
  EXPECT_EQ(text + ": file is 8 bytes, over the 4 bytes limit for input files",
            read_regular_file(text, 4).message());
  // A symlink to a regular file is that file.
  fs::create_symlink(text, dir_ / "link.yaml");
  EXPECT_EQ("tick: 5\n", read_regular_file((dir_ / "link.yaml").string()).value());
}

// A FIFO nobody writes to is refused at once (a command waiting on it would seem to hang); a
// pipe with a writer, as `<(command)` gives, is read to its end.
TEST_F(InputFileTest, AFifoWithoutAWriterIsRefusedAndAPipeIsRead) {
  const std::string fifo = (dir_ / "fifo.yaml").string();
  ASSERT_EQ(0, ::mkfifo(fifo.c_str(), 0600));
  EXPECT_EQ(fifo + ": is a FIFO with no writer (or nothing written), expected a file",
            read_input_file(fifo).message());
  int ends[2];
  ASSERT_EQ(0, ::pipe(ends));
  ASSERT_EQ(5, ::write(ends[1], "jobs:", 5));
  const std::string reader = "/dev/fd/" + std::to_string(ends[0]);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a writer slower than the read
    EXPECT_EQ(4, ::write(ends[1], " []\n", 4));
    ::close(ends[1]);
  });
  EXPECT_EQ("jobs: []\n", read_input_file(reader).value());
  writer.join();
  ::close(ends[0]);
}

TEST_F(InputFileTest, NamesMissingFilesAndDirectories) {
  EXPECT_EQ((dir_ / "nope.yaml").string() + ": no such file",
            read_input_file((dir_ / "nope.yaml").string()).message());
  EXPECT_EQ(dir_.string() + ": is a directory, expected a file",
            read_input_file(dir_.string()).message());
}

TEST_F(InputFileTest, LoadsFilesAndNamesThemInErrors) {
  const std::string good = write("jobs.yaml", "jobs:\n  - {id: a, time: {gpu: 3}}\n");
  EXPECT_TRUE(load_workload_file(good).ok());
  const std::string bad = write("bad.yaml", "jobs:\n  - {id: a, time: {gpu: -3}}\n");
  EXPECT_EQ(bad + ":2: job \"a\": time.gpu must be a positive number of seconds, got -3",
            load_workload_file(bad).message());
  const std::string binary = write("binary.yaml", std::string("\x00\x01\xff{[", 5));
  EXPECT_FALSE(load_workload_file(binary).ok());
}

}  // namespace
}  // namespace allox
