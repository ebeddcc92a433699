// LRU victim choice (spec rule 13 and the engine-pool tests of section 4):
// none loaded, all pinned, oldest first, coldest that alone frees enough,
// coldest among sufficient, largest when none suffices, plain LRU without a
// byte target, skip pinned / active / leased / loading / the requester.
#include "pool/victim_choice.h"

#include <gtest/gtest.h>

namespace llmhost::victim_choice_test {
namespace {

VictimCandidate C(const char* id, uint64_t bytes, double last_access) {
  VictimCandidate c;
  c.id = id;
  c.freeable_bytes = bytes;
  c.last_access = last_access;
  return c;
}

std::string Pick(const std::vector<VictimCandidate>& c, int64_t need, const std::string& exclude = "") {
  auto i = ChooseVictim(c, need, exclude);
  return i ? c[*i].id : "";
}

TEST(VictimChoice, NoneLoadedOrAllPinned) {
  EXPECT_EQ(Pick({}, 10), "");
  auto a = C("a", 10, 1), b = C("b", 10, 2);
  a.pinned = b.pinned = true;
  EXPECT_EQ(Pick({a, b}, 10), "");
  auto u = C("u", 10, 3);
  u.loaded = false;
  EXPECT_EQ(Pick({u}, 10), "");
}

TEST(VictimChoice, OldestFirstWhenBigEnough) {
  EXPECT_EQ(Pick({C("new", 10, 30), C("old", 10, 10), C("mid", 10, 20)}, 5), "old");
}

TEST(VictimChoice, ColdestThatAloneFreesEnough) {
  // The oldest is too small; the next-coldest big enough one wins over a larger newer one.
  EXPECT_EQ(Pick({C("tiny-old", 1, 1), C("big-mid", 8, 2), C("huge-new", 20, 3)}, 6), "big-mid");
  // Coldest among several sufficient ones.
  EXPECT_EQ(Pick({C("s1", 9, 5), C("s2", 9, 4), C("small", 1, 1)}, 6), "s2");
}

TEST(VictimChoice, LargestWhenNoneSuffices) {
  EXPECT_EQ(Pick({C("a", 3, 1), C("b", 5, 2), C("c", 4, 3)}, 100), "b");
  EXPECT_EQ(Pick({C("a", 5, 2), C("b", 5, 1)}, 100), "b");  // tie: the older
}

TEST(VictimChoice, PlainLruWithoutAByteTarget) {
  EXPECT_EQ(Pick({C("big", 100, 9), C("small-old", 1, 2)}, 0), "small-old");
  EXPECT_EQ(Pick({C("big", 100, 9), C("small-old", 1, 2)}, -5), "small-old");
}

TEST(VictimChoice, SkipsPinnedActiveLeasedLoadingAndTheRequester) {
  auto pinned = C("pinned", 10, 1);
  pinned.pinned = true;
  auto active = C("active", 10, 2);
  active.active = true;
  auto leased = C("leased", 10, 3);
  leased.leased = true;
  auto loading = C("loading", 10, 4);
  loading.loading = true;
  auto requester = C("me", 10, 5);
  auto free = C("free", 10, 6);
  EXPECT_EQ(Pick({pinned, active, leased, loading, requester, free}, 5, "me"), "free");
  EXPECT_EQ(Pick({pinned, active, leased, loading, requester}, 5, "me"), "");
}

}  // namespace
}  // namespace llmhost::victim_choice_test
