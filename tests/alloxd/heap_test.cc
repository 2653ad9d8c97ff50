// alloxd/heap.h: after tune_heap(), a large block freed and asked for again is mapped afresh
// (and unmapped when freed) rather than carved from the heap, where glibc's default, having
// raised its threshold to the block freed, would keep it.
#include "alloxd/heap.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace allox::extender {
namespace {

// Keeps the compiler from eliding a malloc/free pair whose memory nothing reads.
void escape(void* p) {
  asm volatile("" : : "g"(p) : "memory");
}

TEST(HeapTest, ALargeBlockFreedAndAskedForAgainIsMappedNotKept) {
  ASSERT_TRUE(tune_heap().ok());
  constexpr std::size_t kBlock = 4 << 20;
  void* first = std::malloc(kBlock);
  ASSERT_NE(nullptr, first);
  std::memset(first, 1, kBlock);
  escape(first);
  std::free(first);
  const std::size_t mapped_before = mallinfo2().hblkhd;
  void* second = std::malloc(kBlock);
  ASSERT_NE(nullptr, second);
  std::memset(second, 2, kBlock);
  escape(second);
  const std::size_t mapped_while_held = mallinfo2().hblkhd;
  EXPECT_GE(mapped_while_held, mapped_before + kBlock);  // its own mapping
  std::free(second);
  // Given back at once (other threads of the test binary may map and unmap meanwhile).
  EXPECT_LE(mallinfo2().hblkhd + kBlock, mapped_while_held);
}

}  // namespace
}  // namespace allox::extender
