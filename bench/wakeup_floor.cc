// The machine's floor for a request/response round trip over loopback while other threads want
// the cores: what any client and server thread pair gets from the kernel, before any code of
// alloxd or the emulator is involved. The /filter p99 target (< 2 ms) is measured in
// `allox bench cluster` with both cores saturated; this says how much of a 2 ms tail the
// scheduler alone makes under such load, and which kinds of load (their class, nice value and
// whether they run in user space or in system calls) let a woken thread in at once.
//
// One client thread sends a body of --body bytes, the server thread reads it, checks it and
// answers 256 bytes, the client times the exchange; --pause between calls lets the server
// sleep as alloxd's request thread does between kube-scheduler's calls. Meanwhile --load
// threads each loop on either user-space work (a hash loop, a 256 KB buffer allocated and
// filled, and a 0.1 ms sleep one time in four) or system calls (1 MB through a socket pair in
// 512 KB writes and reads). Each row runs --runs times; the table prints the median of each
// column over the runs.
//
//   build/bench/wakeup_floor [--calls 3000] [--runs 3] [--load 6] [--body 61440]
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_priority.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace priority = allox;

enum class LoadClass { kNormal, kBatch, kNice10, kIdle };
enum class LoadKind { kUser, kSyscalls };

struct Row {
  const char* label;
  int load_threads_factor;  // 0: no load, 1: --load threads
  LoadClass load_class;
  LoadKind load_kind;
  std::chrono::microseconds pair_slice;  // 0: the kernel's default slice for the pair
};

struct Quantiles {
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0, over_2ms_percent = 0;
};

void send_all(int fd, const char* data, std::size_t size) {
  for (std::size_t sent = 0; sent < size;) {
    const ssize_t n = ::write(fd, data + sent, size - sent);
    if (n <= 0) throw std::runtime_error(std::string("write: ") + std::strerror(errno));
    sent += static_cast<std::size_t>(n);
  }
}

void read_all(int fd, char* data, std::size_t size) {
  for (std::size_t got = 0; got < size;) {
    const ssize_t n = ::read(fd, data + got, size - got);
    if (n <= 0) throw std::runtime_error(std::string("read: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
}

void enter_class(LoadClass load_class) {
  switch (load_class) {
    case LoadClass::kNormal:
      break;
    case LoadClass::kBatch:
      (void)priority::run_this_thread_in_background();
      break;
    case LoadClass::kNice10:
      (void)priority::set_this_thread_nice(10);
      break;
    case LoadClass::kIdle:
      (void)priority::run_this_thread_when_idle();
      break;
  }
}

// One load thread's loop until `stop`.
void load(LoadClass load_class, LoadKind kind, const std::atomic<bool>& stop) {
  enter_class(load_class);
  if (kind == LoadKind::kSyscalls) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return;
    int buffer_bytes = 4 << 20;
    ::setsockopt(pair[0], SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof buffer_bytes);
    ::setsockopt(pair[1], SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof buffer_bytes);
    std::vector<char> chunk(512 << 10, 'x');
    try {
      while (!stop.load(std::memory_order_relaxed)) {
        send_all(pair[0], chunk.data(), chunk.size());
        read_all(pair[1], chunk.data(), chunk.size());
      }
    } catch (const std::exception&) {
      // A socket pair the kernel stops serving ends this thread's load, not the run.
    }
    ::close(pair[0]);
    ::close(pair[1]);
    return;
  }
  unsigned state = 1;
  while (!stop.load(std::memory_order_relaxed)) {
    for (int i = 0; i < 200'000; ++i) state = state * 1103515245U + 12345U;
    std::vector<char> block(256 << 10, static_cast<char>(state));
    if ((state >> 8) % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

Quantiles quantiles(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    return ms[std::min(ms.size() - 1,
                       static_cast<std::size_t>(q * static_cast<double>(ms.size())))];
  };
  const auto over = std::count_if(ms.begin(), ms.end(), [](double v) { return v > 2.0; });
  return {at(0.5),   at(0.9),   at(0.99),
          at(0.999), ms.back(), 100.0 * static_cast<double>(over) / static_cast<double>(ms.size())};
}

struct Options {
  int calls = 3000;
  int runs = 3;
  int load_threads = 6;
  std::size_t body_bytes = 61440;  // a /filter naming ~4,000 nodes
  int pause_us = 500;
};

// One run of `row`: the round trips' times in ms.
std::vector<double> run_once(const Row& row, const Options& options) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw std::runtime_error(std::string("loopback listener: ") + std::strerror(errno));
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> loaders;
  loaders.reserve(static_cast<std::size_t>(row.load_threads_factor) *
                  static_cast<std::size_t>(options.load_threads));
  for (int i = 0; i < row.load_threads_factor * options.load_threads; ++i)
    loaders.emplace_back(load, row.load_class, row.load_kind, std::cref(stop));
  const int one = 1;
  std::thread server([&] {
    if (row.pair_slice.count() > 0) (void)priority::run_this_thread_interactively(row.pair_slice);
    const int connection = ::accept(listener, nullptr, nullptr);
    ::setsockopt(connection, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::vector<char> body(options.body_bytes);
    char answer[256] = {};
    try {
      for (int i = 0; i < options.calls; ++i) {
        read_all(connection, body.data(), body.size());
        // The answer depends on every byte read, as a parsed request's does.
        unsigned sum = 0;
        for (char c : body) sum = sum * 31U + static_cast<unsigned char>(c);
        std::memcpy(answer, &sum, sizeof sum);
        send_all(connection, answer, sizeof answer);
      }
    } catch (const std::exception&) {
      // The client failed first (its error is the run's) or closed: nothing more to answer.
    }
    ::close(connection);
  });
  if (row.pair_slice.count() > 0) (void)priority::run_this_thread_interactively(row.pair_slice);
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  std::vector<double> ms;
  std::string error;
  try {
    if (::connect(client, reinterpret_cast<sockaddr*>(&address), length) != 0)
      throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::vector<char> body(options.body_bytes, 'n');
    char answer[256];
    ms.reserve(static_cast<std::size_t>(options.calls));
    for (int i = 0; i < options.calls; ++i) {
      const auto begin = Clock::now();
      send_all(client, body.data(), body.size());
      read_all(client, answer, sizeof answer);
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - begin).count());
      std::this_thread::sleep_for(std::chrono::microseconds(options.pause_us));
    }
  } catch (const std::exception& failure) {
    error = failure.what();
    // Unblocks the server, whether it waits in accept() or in read().
    ::shutdown(listener, SHUT_RDWR);
    ::shutdown(client, SHUT_RDWR);
  }
  stop = true;
  server.join();
  for (std::thread& t : loaders) t.join();
  ::close(client);
  ::close(listener);
  // The client's slice is not handed to the next row.
  if (row.pair_slice.count() > 0) (void)priority::run_this_thread_interactively({});
  if (!error.empty()) throw std::runtime_error(error);
  return ms;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

// Failures (a socket the machine refuses) end the run with their reason.
int main(int argc, char** argv) try {
  Options options;
  CLI::App app{
      "A loopback request/response round trip's latency while other threads want the cores: the "
      "kernel's floor under the /filter p99 target"};
  app.add_option("--calls", options.calls, "round trips per run")
      ->check(CLI::Range(100, 1'000'000));
  app.add_option("--runs", options.runs, "runs per row (medians printed)")
      ->check(CLI::Range(1, 20));
  app.add_option("--load", options.load_threads, "load threads in the loaded rows")
      ->check(CLI::Range(1, 64));
  app.add_option("--body", options.body_bytes, "request bytes")->check(CLI::Range(1, 16 << 20));
  app.add_option("--pause", options.pause_us, "microseconds between calls")
      ->check(CLI::Range(0, 1'000'000));
  CLI11_PARSE(app, argc, argv);

  using std::chrono::microseconds;
  const Row rows[] = {
      {"no other load", 0, LoadClass::kNormal, LoadKind::kUser, microseconds(0)},
      {"load: normal, user space", 1, LoadClass::kNormal, LoadKind::kUser, microseconds(0)},
      {"load: normal, system calls", 1, LoadClass::kNormal, LoadKind::kSyscalls, microseconds(0)},
      {"load: batch, user space", 1, LoadClass::kBatch, LoadKind::kUser, microseconds(0)},
      {"load: nice 10, user space", 1, LoadClass::kNice10, LoadKind::kUser, microseconds(0)},
      {"load: idle class, user space", 1, LoadClass::kIdle, LoadKind::kUser, microseconds(0)},
      {"load: idle class, system calls", 1, LoadClass::kIdle, LoadKind::kSyscalls, microseconds(0)},
      {"load: normal, user; pair 0.1 ms slice", 1, LoadClass::kNormal, LoadKind::kUser,
       microseconds(100)},
      {"load: normal, syscalls; pair 0.1 ms slice", 1, LoadClass::kNormal, LoadKind::kSyscalls,
       microseconds(100)},
  };
  std::printf(
      "wakeup floor: %d round trips of %zu bytes -> 256 bytes over loopback TCP, %d us apart, "
      "%d load threads in the loaded rows, %u cores; medians of %d runs\n\n",
      options.calls, options.body_bytes, options.pause_us, options.load_threads,
      std::thread::hardware_concurrency(), options.runs);
  std::printf("%-44s %8s %8s %8s %8s %8s %9s\n", "row", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms",
              "max ms", "over 2 ms");
  for (const Row& row : rows) {
    std::vector<double> p50, p90, p99, p999, max, over;
    for (int run = 0; run < options.runs; ++run) {
      const Quantiles q = quantiles(run_once(row, options));
      p50.push_back(q.p50);
      p90.push_back(q.p90);
      p99.push_back(q.p99);
      p999.push_back(q.p999);
      max.push_back(q.max);
      over.push_back(q.over_2ms_percent);
    }
    std::printf("%-44s %8.3f %8.3f %8.3f %8.3f %8.2f %8.2f%%\n", row.label, median(p50),
                median(p90), median(p99), median(p999), median(max), median(over));
    std::fflush(stdout);
  }
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "wakeup_floor: %s\n", error.what());
  return 1;
}
