#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace allox {

namespace {

std::string mebibytes(std::uintmax_t bytes) {
  if (bytes < (1u << 20)) return std::to_string(bytes) + " bytes";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1u << 20));
  return text;
}

// What a non-regular file is, for the error naming it.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Closes a descriptor on every return.
struct Descriptor {
  int fd;
  ~Descriptor() { ::close(fd); }
};

}  // namespace

Expected<std::string> read_input_file(const std::string& path, std::size_t limit) {
  // O_NONBLOCK so that opening a FIFO nobody writes to returns at once instead of waiting for a
  // writer; fstat on the open descriptor, so the file checked is the file read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) return Error{path + ": no such file"};
    if (error == EISDIR) return Error{path + ": is a directory, expected a file"};
    return Error{path + ": cannot be opened for reading: " + std::strerror(error)};
  }
  const Descriptor closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error{path + ": cannot be read: " + std::strerror(errno)};
  if (S_ISDIR(st.st_mode)) return Error{path + ": is a directory, expected a file"};
  if (S_ISREG(st.st_mode) && static_cast<std::uintmax_t>(st.st_size) > limit) {
    return Error{path + ": file is " + mebibytes(static_cast<std::uintmax_t>(st.st_size)) +
                 ", over the " + mebibytes(limit) + " limit for input files"};
  }
  std::string text;
  char chunk[1 << 16];
  if (S_ISFIFO(st.st_mode)) {
    // A pipe with a writer (`<(command)`, `/dev/stdin` in a pipeline) is read to its end. With
    // none, a non-blocking read says end of input at once; a writer still to come cannot be told
    // from none, so that is an error rather than a wait for ever.
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n == 0) {
      return Error{path + ": is a FIFO with no writer (or nothing written), expected a file"};
    }
    if (n > 0) text.append(chunk, static_cast<std::size_t>(n));
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      return Error{path + ": cannot be read: " + std::strerror(errno)};
    }
  }
  // From here a pipe's reads wait for its writer, as reads of a pipe do.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  // Read in chunks and stop past the limit: a pipe or device has no size to check first.
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{path + ": cannot be read: " + std::strerror(errno)};
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
    if (text.size() > limit) {
      return Error{path + ": input is over the " + mebibytes(limit) + " limit for input files"};
    }
  }
  return text;
}

Expected<std::string> read_regular_file(const std::string& path, std::size_t limit) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. fstat on the open
  // descriptor, so the file checked is the file read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) return Error{path + ": no such file"};
    return Error{path + ": cannot be opened for reading: " + std::strerror(error)};
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const mode_t mode = st.st_mode;
    ::close(fd);
    return Error{path + ": is " + file_kind(mode) + ", expected a regular file"};
  }
  if (static_cast<std::uintmax_t>(st.st_size) > limit) {
    ::close(fd);
    return Error{path + ": file is " + mebibytes(static_cast<std::uintmax_t>(st.st_size)) +
                 ", over the " + mebibytes(limit) + " limit for input files"};
  }
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return Error{path + ": cannot be read: " + std::strerror(error)};
    }
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
    if (text.size() > limit) {  // the file grew while it was read
      ::close(fd);
      return Error{path + ": input is over the " + mebibytes(limit) + " limit for input files"};
    }
  }
  ::close(fd);
  return text;
}

}  // namespace allox
