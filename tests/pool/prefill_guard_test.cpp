// Prefill memory guard and the memory monitor's arithmetic (spec section 3
// rules 4–7, section 4 "prefill memory guard", "memory monitor"): KV bytes
// per token, blocks to free, scratch per chunk, pricing of uncached and
// mostly-cached prompts, eviction before rejecting, skips.
#include "pool/prefill_guard.h"

#include <gtest/gtest.h>

#include "fake_engine.h"

namespace llmhost::prefill_guard_test {
namespace {

using testing::kGB;
using testing::PoolFixture;
using testing::FakeModelSpec;

// Llama-3-8B-like: 32 layers, 32 heads, 8 KV heads of 128, f16 KV.
PrefillDims Llama8B() {
  PrefillDims d;
  d.n_layers = 32;
  d.n_heads = 32;
  d.n_kv_heads = 8;
  d.head_dim = 128;
  d.hidden = 4096;
  d.intermediate = 14336;
  d.kv_dtype_bytes = 2;
  d.prefill_chunk = 512;
  return d;
}

TEST(PrefillEstimator, KvBytesAndBlocks) {
  const PrefillDims d = Llama8B();
  // tokens × kv_heads × head_dim × dtype × 2 × layers: 128 KiB per token.
  EXPECT_EQ(KvBytesForTokens(d, 1), 8u * 128 * 2 * 2 * 32);
  EXPECT_EQ(KvBytesForTokens(d, 1000), 1000u * 131072);
  EXPECT_EQ(KvBytesForTokens(d, 0), 0u);
  EXPECT_EQ(KvBlocksToFree(0, 100), 0);
  EXPECT_EQ(KvBlocksToFree(1, 100), 1);
  EXPECT_EQ(KvBlocksToFree(100, 100), 1);
  EXPECT_EQ(KvBlocksToFree(101, 100), 2);  // rounds up
  // Saturates instead of overflowing on absurd dimensions.
  PrefillDims huge = d;
  huge.n_layers = int64_t{1} << 40;
  EXPECT_EQ(KvBytesForTokens(huge, int64_t{1} << 40), UINT64_MAX);
}

TEST(PrefillEstimator, ScratchIsChargedPerChunk) {
  PrefillDims d = Llama8B();
  const uint64_t per_token = 4 * 4096 + 2 * 4096 + 2 * 1024 + 3 * 14336;
  // A materialising kernel: chunk × n_heads score rows as long as the sequence.
  EXPECT_EQ(PrefillScratchBytes(d, 512, 4096), 512 * per_token * 4 + 512ull * 32 * 4096 * 4);
  d.attention_scratch_rows = 8;  // a streaming kernel's few rows
  EXPECT_EQ(PrefillScratchBytes(d, 512, 4096), 512 * per_token * 4 + 8ull * 4096 * 4);
}

TEST(PrefillEstimator, ZeroWithoutModelInfoOrNewTokens) {
  EXPECT_EQ(EstimatePrefill(PrefillDims(), 1000, 0).peak(), 0u);
  EXPECT_EQ(EstimatePrefill(Llama8B(), 1000, 1000).peak(), 0u);  // fully cached
  EXPECT_EQ(EstimatePrefill(Llama8B(), 0, 0).peak(), 0u);
  EXPECT_GT(EstimatePrefill(Llama8B(), 1, 0).peak(), 0u);
}

TEST(PrefillEstimator, LongUncachedAndLongMostlyCachedContexts) {
  const PrefillDims d = Llama8B();
  const PrefillEstimate uncached = EstimatePrefill(d, 32768, 0);
  EXPECT_EQ(uncached.kv_bytes, KvBytesForTokens(d, 32768));
  EXPECT_EQ(uncached.scratch_bytes, PrefillScratchBytes(d, 512, 32768));
  // 32000 of 32768 cached: KV only for the 768-token suffix, scratch for one
  // chunk over the whole sequence.
  const PrefillEstimate cached = EstimatePrefill(d, 32768, 32000);
  EXPECT_EQ(cached.kv_bytes, KvBytesForTokens(d, 768));
  EXPECT_EQ(cached.scratch_bytes, PrefillScratchBytes(d, 512, 32768));
  // A suffix smaller than a chunk is one smaller chunk.
  EXPECT_EQ(EstimatePrefill(d, 32768, 32700).scratch_bytes, PrefillScratchBytes(d, 68, 32768));
  // Whole-prompt prefill (chunk 0).
  PrefillDims whole = d;
  whole.prefill_chunk = 0;
  EXPECT_EQ(EstimatePrefill(whole, 1000, 0).scratch_bytes, PrefillScratchBytes(d, 1000, 1000));
}

TEST(PrefillEstimator, PeakWithAndWithoutAPreallocatedKvPool) {
  PrefillEstimate e{3 * kGB, kGB};
  PrefillReadings r{2 * kGB, 4 * kGB, 5 * kGB};
  EXPECT_EQ(PrefillPeak(e, r, false), 5 * kGB + 4 * kGB);  // three-way max + KV + scratch
  // A preallocated pool is in committed already: KV grows only the footprint.
  EXPECT_EQ(PrefillPeak(e, r, true), std::max(4 * kGB + 4 * kGB, 5 * kGB + kGB));
}

// A model whose admission price holds its workspace (a chunk's activations)
// is not charged them again against its admitted or committed bytes; the
// footprint (what is touched now) still is.
TEST(PrefillEstimator, ActivationsInTheModelsPriceAreNotChargedTwice) {
  PrefillDims d = Llama8B();
  const PrefillEstimate plain = EstimatePrefill(d, 4096, 0);
  d.priced_workspace_bytes = 8 * kGB;  // more than a chunk's activations
  const PrefillEstimate priced = EstimatePrefill(d, 4096, 0);
  const uint64_t per_token = 4 * 4096 + 2 * 4096 + 2 * 1024 + 3 * 14336;
  EXPECT_EQ(priced.peak(), plain.peak());
  EXPECT_EQ(priced.priced_bytes, 512 * per_token * 4);
  EXPECT_EQ(priced.beyond_price(), plain.peak() - 512 * per_token * 4);
  EXPECT_EQ(plain.beyond_price(), plain.peak());
  const PrefillReadings r{0, kGB, 20 * kGB};
  EXPECT_EQ(PrefillPeak(plain, r, true), 20 * kGB + plain.scratch_bytes);
  EXPECT_EQ(PrefillPeak(priced, r, true), 20 * kGB + plain.scratch_bytes - priced.priced_bytes);
  const PrefillReadings touched{0, 20 * kGB, 20 * kGB};  // the footprint term still adds everything
  EXPECT_EQ(PrefillPeak(priced, touched, true), 20 * kGB + priced.peak());
  // A short suffix's smaller chunk: only its own activations are in the price's share.
  EXPECT_EQ(EstimatePrefill(d, 4096, 4000).priced_bytes, 96 * per_token * 4);
  // Never more than the workspace that was priced.
  d.priced_workspace_bytes = 1000;
  EXPECT_EQ(EstimatePrefill(d, 4096, 0).priced_bytes, 1000u);
  // Saturated dimensions stay saturated, never wrap below the limit.
  PrefillEstimate huge{UINT64_MAX, kGB, kGB};
  EXPECT_EQ(huge.peak(), UINT64_MAX);
  EXPECT_EQ(huge.beyond_price(), UINT64_MAX - kGB);
}

// ---- the pool's guard ---------------------------------------------------------------

// A model whose KV cache grows (claims its blocks: priced alone), or one
// whose KV pool was allocated up front (priced against what memory holds now).
FakeModelSpec WithDims(uint64_t resident, bool kv_preallocated = false) {
  FakeModelSpec s;
  s.resident = resident;
  s.dims = Llama8B();
  s.dims.kv_preallocated = kv_preallocated;
  return s;
}

// Prompt sizes with a KV of about `gb` GiB (128 KiB per token).
int64_t TokensFor(double gb) { return static_cast<int64_t>(gb * 8192); }

TEST(PoolPrefillGuard, PassesANormalRequestAndRejectsAnOversizedOne) {
  PoolFixture f;
  f.factory->Set("a", WithDims(3 * kGB));
  f.Start({"a"});
  AcquireResult r = f.pool->Acquire("a");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(f.pool->CheckPrefill(*r.lease, 2000, 0).ok());
  // Limit 10 GiB × 0.9 = 9 GiB; 3 GiB committed + 7 GiB of KV does not fit.
  PoolError e = f.pool->CheckPrefill(*r.lease, TokensFor(7), 0);
  ASSERT_EQ(e.code, PoolErrorCode::kPrefillRejected);
  EXPECT_STREQ(PoolErrorCodeName(e.code), "prefill_memory_exceeded");
  EXPECT_EQ(e.limit_bytes, f.pool->Memory().host.prefill_limit);
  EXPECT_GT(e.estimated_bytes, e.limit_bytes);
  EXPECT_NE(e.message.find("prefill memory guard rejected this prompt: Prefill would require ~"),
            std::string::npos)
      << e.message;
  EXPECT_NE(e.message.find("shorten the context"), std::string::npos);
  // The same prompt, mostly cached, passes.
  EXPECT_TRUE(f.pool->CheckPrefill(*r.lease, TokensFor(7), TokensFor(6.5)).ok());
}

// The check runs on every request: it reads the process's Rss (kernel
// counters), never smaps_rollup, whose page-table walk costs ~12 ms a
// resident GiB.
TEST(PoolPrefillGuard, EachRequestReadsTheCheapProcessReading) {
  PoolFixture f;
  f.factory->Set("a", WithDims(3 * kGB));
  f.Start({"a"});
  AcquireResult r = f.pool->Acquire("a");
  ASSERT_TRUE(r.ok());
  const int full = f.probe->process_reads(), cheap = f.probe->rss_reads();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(f.pool->CheckPrefill(*r.lease, 2000, 0).ok());
  EXPECT_EQ(f.probe->process_reads(), full);
  EXPECT_EQ(f.probe->rss_reads(), cheap + 5);
}

// A growing KV cache is priced as if nothing else ran: busy and idle models
// do not count (the prompt waits for their memory: its KV claims make room),
// pinned ones and the model itself do.
TEST(PoolPrefillGuard, AGrowingCacheIsPricedWithNothingElseRunning) {
  PoolFixture f;
  f.factory->Set("a", WithDims(2 * kGB));
  f.factory->Set("idle", WithDims(3 * kGB));
  f.factory->Set("busy", WithDims(2 * kGB));
  f.factory->Set("pinned", WithDims(kGB));
  f.Start({"a", "busy", "idle", "pinned"});
  ASSERT_TRUE(f.pool->SetPinned("pinned", true).ok());
  ASSERT_TRUE(f.Touch("pinned").ok());
  ASSERT_TRUE(f.Touch("idle").ok());
  AcquireResult busy = f.pool->Acquire("busy");
  AcquireResult r = f.pool->Acquire("a");
  ASSERT_TRUE(r.ok() && busy.ok());
  // 2 + 1 (pinned) + 3 GiB of KV + 1.7 GiB of scratch < 9: passes although 8 GiB are held now.
  EXPECT_TRUE(f.pool->CheckPrefill(*r.lease, TokensFor(3), 0).ok());
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"a", "busy", "idle", "pinned"})) << "nothing evicted for it";
  // 2 + 1 + 6.5 GiB of KV cannot fit even alone: refused, nothing evicted either.
  PoolError e = f.pool->CheckPrefill(*r.lease, TokensFor(6.5), 0);
  EXPECT_EQ(e.code, PoolErrorCode::kPrefillRejected);
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"a", "busy", "idle", "pinned"}));
  EXPECT_EQ(e.estimated_bytes, 3 * kGB + EstimatePrefill(Llama8B(), TokensFor(6.5), 0).peak());
}

// The engine's workspace (a chunk's activations) is in the model's admission
// size: a prompt that fits beside it is not refused for counting it twice.
TEST(PoolPrefillGuard, AModelsPricedWorkspaceIsNotChargedAgain) {
  for (bool priced : {false, true}) {
    PoolFixture f;
    FakeModelSpec spec = WithDims(2 * kGB);
    spec.dims.attention_scratch_rows = 8;  // scratch: mostly the chunk's activations (~0.13 GiB)
    spec.dims.priced_workspace_bytes = priced ? kGB : 0;
    f.factory->Set("a", spec);
    f.Start({"a"});
    AcquireResult r = f.pool->Acquire("a");
    ASSERT_TRUE(r.ok());
    // 2 GiB + 6.9 GiB of KV + 0.13 GiB of activations > 9 GiB; without the activations < 9.
    const PrefillEstimate est = EstimatePrefill(spec.dims, TokensFor(6.9), 0);
    PoolError e = f.pool->CheckPrefill(*r.lease, TokensFor(6.9), 0);
    EXPECT_EQ(e.ok(), priced) << e.message;
    if (!priced) EXPECT_EQ(e.estimated_bytes, 2 * kGB + est.peak());
    // Past the limit either way, the message says which part was counted already.
    e = f.pool->CheckPrefill(*r.lease, TokensFor(7.2), 0);
    ASSERT_EQ(e.code, PoolErrorCode::kPrefillRejected);
    EXPECT_EQ(e.estimated_bytes, 2 * kGB + EstimatePrefill(spec.dims, TokensFor(7.2), 0).beyond_price());
    EXPECT_EQ(e.message.find("of the scratch is in the model's admitted size") != std::string::npos, priced)
        << e.message;
  }
}

TEST(PoolPrefillGuard, APreallocatedPoolEvictsIdleModelsBeforeRejecting) {
  PoolFixture f;
  f.factory->Set("a", WithDims(2 * kGB, true));
  f.factory->Set("idle", WithDims(6 * kGB, true));
  f.Start({"a", "idle"});
  ASSERT_TRUE(f.Touch("idle").ok());
  AcquireResult r = f.pool->Acquire("a");
  ASSERT_TRUE(r.ok());
  // 8 GiB committed + 1.7 GiB of scratch > 9 GiB; without the idle model: 3.7 GiB.
  EXPECT_TRUE(f.pool->CheckPrefill(*r.lease, TokensFor(3), 0).ok());
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"a"});
}

TEST(PoolPrefillGuard, APreallocatedPoolNeverEvictsTheRequesterPinnedOrBusyModelsAndReclaimsFirst) {
  PoolFixture f;
  f.factory->Set("a", WithDims(2 * kGB, true));
  f.factory->Set("pinned", WithDims(3 * kGB, true));
  f.factory->Set("busy", WithDims(3 * kGB, true));
  f.Start({"a", "busy", "pinned"});
  ASSERT_TRUE(f.pool->SetPinned("pinned", true).ok());
  ASSERT_TRUE(f.Touch("pinned").ok());
  AcquireResult busy = f.pool->Acquire("busy");
  AcquireResult r = f.pool->Acquire("a");
  ASSERT_TRUE(r.ok() && busy.ok());
  PoolError e = f.pool->CheckPrefill(*r.lease, TokensFor(3), 0);  // 8 committed + 1.7 of scratch > 9
  EXPECT_EQ(e.code, PoolErrorCode::kPrefillRejected);
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"a", "busy", "pinned"}));
  EXPECT_GE(f.factory->Last("pinned")->caches_released.load(), 1);  // one reclaim round first
}

TEST(PoolPrefillGuard, SkippedWhenTheGuardIsOffOrTheRequestFullyCached) {
  {
    PoolFixture f;
    f.options.guard.prefill_guard = false;
    f.factory->Set("a", WithDims(3 * kGB));
    f.Start({"a"});
    AcquireResult r = f.pool->Acquire("a");
    EXPECT_TRUE(f.pool->CheckPrefill(*r.lease, TokensFor(100), 0).ok());
  }
  {
    PoolFixture f;
    f.options.guard.tier = GuardTier::kOff;
    f.factory->Set("a", WithDims(3 * kGB));
    f.Start({"a"}, 0);
    AcquireResult r = f.pool->Acquire("a");
    EXPECT_TRUE(f.pool->CheckPrefill(*r.lease, TokensFor(100), 0).ok());
  }
  {
    PoolFixture f;
    f.factory->Set("a", WithDims(3 * kGB));
    f.factory->Set("b", testing::Spec(kGB));  // no model dimensions: the estimate is 0
    f.Start({"a", "b"});
    AcquireResult r = f.pool->Acquire("a");
    EXPECT_TRUE(f.pool->CheckPrefill(*r.lease, TokensFor(100), TokensFor(100)).ok());
    EXPECT_FALSE(f.pool->CheckPrefill(*r.lease, TokensFor(100), 0).ok());
    AcquireResult b = f.pool->Acquire("b");
    EXPECT_TRUE(f.pool->CheckPrefill(*b.lease, TokensFor(100), 0).ok());
  }
}

}  // namespace
}  // namespace llmhost::prefill_guard_test
