// core/output_file.h: the one writer of output files creates the directory and names the path
// in its errors.
#include "core/output_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace allox {
namespace {

namespace fs = std::filesystem;

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("allox-output-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(OutputFileTest, CreatesTheDirectoryAndWritesTheBody) {
  const fs::path path = dir_ / "run" / "nested" / "summary.json";
  ASSERT_TRUE(write_output_file(path, [](std::ostream& out) { out << "{}\n"; }).ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ("{}\n", text.str());
  // Truncates on a second write.
  ASSERT_TRUE(write_output_file(path, [](std::ostream& out) { out << "x"; }).ok());
  std::ifstream again(path);
  std::stringstream second;
  second << again.rdbuf();
  EXPECT_EQ("x", second.str());
}

TEST_F(OutputFileTest, ErrorsNameThePath) {
  fs::create_directories(dir_);
  const fs::path blocker = dir_ / "file";
  std::ofstream(blocker) << "a file where a directory is wanted";
  const fs::path path = blocker / "out.csv";
  auto written = write_output_file(path, [](std::ostream& out) { out << "a,b\n"; });
  ASSERT_FALSE(written.ok());
  EXPECT_EQ("cannot write " + path.string(), written.message());
}

}  // namespace
}  // namespace allox
