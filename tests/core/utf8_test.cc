// Which names count as text: valid UTF-8 without control characters.
#include "core/utf8.h"

#include <gtest/gtest.h>

namespace allox {
namespace {

TEST(Utf8Text, AcceptsTextInAnyScript) {
  EXPECT_TRUE(is_utf8_text(""));
  EXPECT_TRUE(is_utf8_text("resnet-50\ttrain"));
  EXPECT_TRUE(is_utf8_text("équipe-ü"));           // two-byte forms
  EXPECT_TRUE(is_utf8_text("チーム"));              // three-byte forms
  EXPECT_TRUE(is_utf8_text("\xf0\x9f\x9a\x80"));   // U+1F680, four bytes
  EXPECT_TRUE(is_utf8_text("\xf4\x8f\xbf\xbf"));   // U+10FFFF, the last code point
}

TEST(Utf8Text, RefusesBytesThatAreNotUtf8OrControlCharacters) {
  EXPECT_FALSE(is_utf8_text("caf\xe9"));                     // Latin-1
  EXPECT_FALSE(is_utf8_text("\xc3"));                        // cut short
  EXPECT_FALSE(is_utf8_text("\x80"));                        // a continuation byte first
  EXPECT_FALSE(is_utf8_text("\xc0\xaf"));                    // overlong '/'
  EXPECT_FALSE(is_utf8_text("\xe0\x80\xaf"));                // overlong, three bytes
  EXPECT_FALSE(is_utf8_text("\xed\xa0\x80"));                // a surrogate
  EXPECT_FALSE(is_utf8_text("\xf4\x90\x80\x80"));            // past U+10FFFF
  EXPECT_FALSE(is_utf8_text(std::string_view("a\0b", 3)));  // NUL
  EXPECT_FALSE(is_utf8_text("a\nb"));
  EXPECT_FALSE(is_utf8_text("\x1b[2Jhi"));                   // a terminal escape
  EXPECT_FALSE(is_utf8_text("a\x7f"));
}

}  // namespace
}  // namespace allox
