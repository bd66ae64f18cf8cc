#include "common/utf8.h"

#include "gtest/gtest.h"

namespace admitd {
namespace {

TEST(Utf8Test, ToValidUtf8ReplacesEachInvalidByte) {
  EXPECT_EQ(ToValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");  // valid: unchanged
  EXPECT_EQ(ToValidUtf8("a\360b"), "a\xef\xbf\xbd" "b");             // a lone lead byte
  EXPECT_EQ(ToValidUtf8("\xc3"), "\xef\xbf\xbd");                    // cut short
  EXPECT_EQ(ToValidUtf8("\xc0\x80"), "\xef\xbf\xbd\xef\xbf\xbd");    // overlong
  EXPECT_EQ(ToValidUtf8("\xed\xa0\x80"),                             // a surrogate
            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(Utf8Test, DecodesOneSequence) {
  uint32_t rune = 0;
  EXPECT_EQ(DecodeUtf8("a", 0, &rune), 1u);
  EXPECT_EQ(rune, 'a');
  EXPECT_EQ(DecodeUtf8("\xe2\x82\xac", 0, &rune), 3u);
  EXPECT_EQ(rune, 0x20ACu);
  EXPECT_EQ(DecodeUtf8("\xf4\x90\x80\x80", 0, &rune), 0u);  // past U+10FFFF
}

}  // namespace
}  // namespace admitd
