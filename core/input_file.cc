#include "core/input_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace allox {

namespace {

std::string mebibytes(std::uintmax_t bytes) {
  if (bytes < (1u << 20)) return std::to_string(bytes) + " bytes";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1u << 20));
  return text;
}

}  // namespace

Expected<std::string> read_input_file(const std::string& path, std::size_t limit) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return Error{path + ": no such file"};
  if (fs::is_directory(status)) return Error{path + ": is a directory, expected a file"};
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > limit) {
    return Error{path + ": file is " + mebibytes(size) + ", over the " + mebibytes(limit) +
                 " limit for input files"};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot be opened for reading"};
  // Read in chunks and stop past the limit: a pipe or special file has no size to check first.
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > limit) {
      return Error{path + ": input is over the " + mebibytes(limit) + " limit for input files"};
    }
  }
  return text;
}

}  // namespace allox
