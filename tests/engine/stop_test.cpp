// StopMatcher as a streaming caller sees it: what comes out of each feed, that a
// stop string is never emitted however the pieces split it, and that nothing is
// lost or duplicated when no stop string is hit.
#include "engine/stop.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace brisk {
namespace {

// Feeds pieces in order; returns everything emitted (including flush when not stopped).
struct Streamed {
  std::string text;
  bool stopped = false;
  int index = -1;
};

Streamed stream(std::vector<std::string> stops, const std::vector<std::string>& pieces) {
  StopMatcher m(std::move(stops));
  Streamed run;
  for (const std::string& p : pieces) {
    StopResult r = m.feed(p);
    run.text += r.text;
    if (r.stopped) {
      run.stopped = true;
      run.index = r.stop_index;
      break;
    }
  }
  if (!run.stopped) run.text += m.flush();
  return run;
}

TEST(StopMatcher, EmptyListPassesThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.feed("hello").text, "hello");
  EXPECT_EQ(m.feed(" world").text, " world");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, EmptyStopStringsAreIgnored) {
  Streamed r = stream({"", "END"}, {"a", "b", "END", "c"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "ab");
  EXPECT_EQ(r.index, 1);
}

TEST(StopMatcher, StopInsideOnePiece) {
  StopMatcher m({"</s>"});
  StopResult r = m.feed("abc</s>tail");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "abc");
  EXPECT_EQ(r.stop_index, 0);
  // Later pieces are swallowed.
  r = m.feed("more");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, HoldsBackAPossiblePrefix) {
  StopMatcher m({"STOP"});
  StopResult r = m.feed("hello ST");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.text, "hello ");  // "ST" might begin "STOP"
  r = m.feed("AR");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.text, "STAR");  // it did not
  r = m.feed("S");
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(m.flush(), "S");
}

TEST(StopMatcher, StopSpanningManyPieces) {
  Streamed r = stream({"<|end|>"}, {"x", "<", "|", "en", "d", "|", ">", "y"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "x");
}

TEST(StopMatcher, EveryWaySplittingTheTextGivesTheSameResult) {
  const std::string text = "one two <|end|> three";
  for (size_t a = 0; a <= text.size(); ++a) {
    for (size_t b = a; b <= text.size(); ++b) {
      Streamed r = stream({"<|end|>"}, {text.substr(0, a), text.substr(a, b - a), text.substr(b)});
      ASSERT_TRUE(r.stopped) << a << "," << b;
      ASSERT_EQ(r.text, "one two ") << a << "," << b;
    }
  }
}

TEST(StopMatcher, OverlappingPrefixesShorterCompletesFirst) {
  Streamed r = stream({"abc", "ab"}, {"x", "a", "b", "c"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "x");
  EXPECT_EQ(r.index, 1);
  // Both in one piece at the same start: the shorter one still wins.
  r = stream({"abc", "ab"}, {"xabc"});
  EXPECT_EQ(r.text, "x");
  EXPECT_EQ(r.index, 1);
}

TEST(StopMatcher, SelfOverlappingStop) {
  // "ababc" contains "abc" at 2: the first "ab" must be released, not lost.
  Streamed r = stream({"abc"}, {"ab", "ab", "c"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "ab");
  r = stream({"aab"}, {"a", "a", "a", "b"});
  EXPECT_EQ(r.text, "a");
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  Streamed r = stream({"World", "lo"}, {"Hello ", "World"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "Hel");
  EXPECT_EQ(r.index, 1);
  r = stream({"\n\n", "User:"}, {"Sure.", " User", ":", " hi"});
  EXPECT_EQ(r.text, "Sure. ");
  EXPECT_EQ(r.index, 1);
}

TEST(StopMatcher, NoStopEmitsEverythingExactlyOnce) {
  const std::vector<std::string> pieces = {"a", "b", "<", "|", "e", "n", "<|", "end", "|", "x"};
  Streamed r = stream({"<|end|>", "|>"}, pieces);
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.text, "ab<|en<|end|x");
}

TEST(StopMatcher, Utf8MultiByteStop) {
  // "。" is E3 80 82; feed it byte by byte, after other multi-byte text.
  const std::string stop = "\xE3\x80\x82";
  StopMatcher m({stop});
  EXPECT_EQ(m.feed("日本").text, "日本");
  StopResult r = m.feed("\xE3");
  EXPECT_EQ(r.text, "");
  r = m.feed("\x80");
  EXPECT_EQ(r.text, "");
  r = m.feed("\x82" "more");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");
}

TEST(StopMatcher, Utf8HeldTextIsReleasedWhole) {
  // "éa" stop; text "éb": the held "é" (2 bytes) comes out whole, never split.
  StopMatcher m({"\xC3\xA9" "a"});
  StopResult r = m.feed("x\xC3\xA9");
  EXPECT_EQ(r.text, "x");
  r = m.feed("b");
  EXPECT_EQ(r.text, "\xC3\xA9" "b");
  EXPECT_FALSE(r.stopped);
}

TEST(StopMatcher, FlushAfterPartialPrefix) {
  Streamed r = stream({"###"}, {"answer", " #", "#"});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.text, "answer ##");
}

}  // namespace
}  // namespace brisk
