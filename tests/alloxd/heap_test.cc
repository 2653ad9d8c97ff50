// alloxd/heap.h: after tune_heap(), a large block freed and asked for again is mapped afresh
// (and unmapped when freed) rather than carved from the heap, where glibc's default, having
// raised its threshold to the block freed, would keep it.
#include "alloxd/heap.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace allox::extender {
namespace {

// Keeps the compiler from eliding a malloc/free pair whose memory nothing reads.
void escape(void* p) {
  asm volatile("" : : "g"(p) : "memory");
}

// The heap's state is the process's: a test run before this one in the same binary may have
// raised glibc's threshold already. The check runs in a process of its own (gtest re-executes
// the binary for it), whatever ran before.
void check_a_large_block_is_mapped_afresh() {
  if (!tune_heap().ok()) {
    std::fprintf(stderr, "tune_heap failed\n");
    std::exit(2);
  }
  constexpr std::size_t kBlock = 4 << 20;
  void* first = std::malloc(kBlock);
  std::memset(first, 1, kBlock);
  escape(first);
  std::free(first);
  const std::size_t mapped_before = mallinfo2().hblkhd;
  void* second = std::malloc(kBlock);
  std::memset(second, 2, kBlock);
  escape(second);
  const std::size_t mapped_while_held = mallinfo2().hblkhd;
  if (mapped_while_held < mapped_before + kBlock) {  // its own mapping
    std::fprintf(stderr, "not mapped afresh: %zu bytes mapped before, %zu while held\n",
                 mapped_before, mapped_while_held);
    std::exit(3);
  }
  std::free(second);
  if (mallinfo2().hblkhd + kBlock > mapped_while_held) {  // given back at once
    std::fprintf(stderr, "not unmapped when freed: %zu bytes still mapped\n", mallinfo2().hblkhd);
    std::exit(4);
  }
  std::exit(0);
}

TEST(HeapTest, ALargeBlockFreedAndAskedForAgainIsMappedNotKept) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(check_a_large_block_is_mapped_afresh(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace allox::extender
