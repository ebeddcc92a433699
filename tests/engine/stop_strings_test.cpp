// StopStringMatcher: stop strings split across pieces at every possible
// boundary are found, never emitted, and what precedes them is emitted in
// full; held-back text is released when it turns out not to be a stop.
#include <gtest/gtest.h>

#include "engine/stop_strings.h"

namespace llmhost::stop_strings_test {
namespace {

// Feeds `text` in pieces cut at `cuts` and returns what came out.
std::string Feed(StopStringMatcher& m, const std::string& text, const std::vector<size_t>& cuts) {
  std::string out;
  size_t prev = 0;
  for (size_t c : cuts) {
    out += m.Add(text.substr(prev, c - prev));
    prev = c;
  }
  out += m.Add(text.substr(prev));
  if (!m.stopped()) out += m.Flush();
  return out;
}

TEST(StopStringsTest, EveryTwoCutSplitFindsTheStop) {
  const std::string text = "The answer is 42.\nUser: next question";
  for (size_t a = 0; a <= text.size(); ++a) {
    for (size_t b = a; b <= text.size(); ++b) {
      StopStringMatcher m({"\nUser:"});
      const std::string out = Feed(m, text, {a, b});
      ASSERT_TRUE(m.stopped()) << a << "," << b;
      EXPECT_EQ(out, "The answer is 42.") << a << "," << b;
      EXPECT_EQ(m.matched(), "\nUser:");
    }
  }
}

TEST(StopStringsTest, HoldsBackOnlyWhatCouldStartAStop) {
  StopStringMatcher m({"END"});
  EXPECT_EQ(m.Add("abc E"), "abc ");  // "E" may start "END"
  EXPECT_EQ(m.Add("N"), "");          // "EN" still may
  EXPECT_EQ(m.Add("x"), "ENx");       // it did not
  EXPECT_EQ(m.Add("EEN"), "E");       // the second E may start it
  EXPECT_EQ(m.Add("D tail"), "");     // "EEND": stop after the first E
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.Add("more"), "");
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopStringsTest, FlushReleasesAPartialStopAtTheEnd) {
  StopStringMatcher m({"</s>"});
  EXPECT_EQ(m.Add("done </"), "done ");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.Flush(), "</");
}

TEST(StopStringsTest, EarliestOccurrenceWinsThenListOrder) {
  StopStringMatcher m({"world", "lo w", "o"});
  EXPECT_EQ(Feed(m, "hello world", {}), "hel");
  EXPECT_EQ(m.matched(), "lo w");
  StopStringMatcher n({"ab", "a"});
  EXPECT_EQ(n.Add("xab"), "x");
  EXPECT_EQ(n.matched(), "ab");  // same position: the one listed first
}

TEST(StopStringsTest, MultiByteCharactersStayWhole) {
  // The stop starts with the same lead byte as the text's "é" (C3 A9 vs C3 A8).
  StopStringMatcher m({"\xC3\xA8!"});
  std::string out = m.Add("caf\xC3\xA9");
  out += m.Add(" \xC3\xA8");
  EXPECT_EQ(out, "caf\xC3\xA9 ");
  out += m.Add("?");
  EXPECT_EQ(out, "caf\xC3\xA9 \xC3\xA8?");
  EXPECT_FALSE(m.stopped());
}

TEST(StopStringsTest, NoStopsPassesThrough) {
  StopStringMatcher m({});
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.Add("anything"), "anything");
  EXPECT_EQ(m.Flush(), "");
}

}  // namespace
}  // namespace llmhost::stop_strings_test
