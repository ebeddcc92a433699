// The key-per-thread chunk kernel of attention (cuda/attention_keys.cuh, the
// default; LLMHOST_CUDA_DECODE_ATTENTION=warps the other) against the CPU reference and the
// warp-per-key kernel: generated rows and f32-path prompt rows stay within
// the f32 path's bound, a row's bits do not depend on its batch (other
// sequences beside it, its place, prompt chunks; a row of one chunk finished
// by the chunk kernel or by the merge; the merge a warp a head or a block a
// head; K staged through shared memory or read directly, V staged or not;
// kernels built for 7 or 8 blocks an SM), and contexts that span one and
// several chunks, windows, soft-capping, GQA groups 1-8 and every K/V
// type are covered. Skipped where there is no GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpu_attention_fixture.h"

namespace llmhost::key_lanes_attention_test {
namespace {

using testing::GpuAttentionTest;
using testing::Part;
using testing::Shape;
using testing::WorstRowError;

class KeyLanesAttentionTest : public GpuAttentionTest {
 protected:
  void SetUp() override {
    GpuAttentionTest::SetUp();
    if (IsSkipped()) return;
    // Prompt rows take the f32 path too (the kernel under test), at `auto`.
    setenv("LLMHOST_CUDA_PROMPT_ATTENTION", "off", 1);
  }
  void TearDown() override {
    unsetenv("LLMHOST_CUDA_MERGE");
    unsetenv("LLMHOST_CUDA_KEY_LANES_STAGE_K");
    unsetenv("LLMHOST_CUDA_KEY_LANES_BLOCKS");
    unsetenv("LLMHOST_CUDA_KEY_LANES_STAGE_V");
    unsetenv("LLMHOST_CUDA_PROMPT_ATTENTION");
    unsetenv("LLMHOST_CUDA_DECODE_ATTENTION");
  }
  static void KeyLanes(bool on) {
    if (on) {
      unsetenv("LLMHOST_CUDA_DECODE_ATTENTION");
    } else {
      setenv("LLMHOST_CUDA_DECODE_ATTENTION", "warps", 1);
    }
  }
};

TEST_F(KeyLanesAttentionTest, RowsAreBatchInvariantAndMatchTheReference) {
  const Shape shapes[] = {
      {32, 8, 128, 0, 0.0f, DType::kBF16},  // Llama-3-8B's
      {4, 4, 64, 50, 0.0f, DType::kF16},    // no GQA, a window
      {16, 2, 256, 0, 30.0f, DType::kBF16}, // group 8, soft-capping
      {12, 4, 128, 0, 0.0f, DType::kF32},   // group 3, f32 K/V
      {10, 2, 64, 200, 0.0f, DType::kF32},  // group 5 (two head tiles), a window across chunks
      {8, 2, 256, 0, 0.0f, DType::kBF16},   // group 4 at 256: K and V staged in 8 and 8 pieces
      {8, 2, 128, 200, 0.0f, DType::kBF16}, // staged, a window: keys from inside a chunk
  };
  std::mt19937 rng(33);
  for (const Shape& s : shapes) {
    devs_.clear();
    caches_.clear();
    tables_.clear();
    q_.clear();
    SCOPED_TRACE("heads " + std::to_string(s.heads) + "/" + std::to_string(s.kv_heads) + " d " +
                 std::to_string(s.head_dim) + " kv " + DTypeName(s.kv));
    // Sequence 0: 300 positions (three chunks); 1: 77 (one); 2: 130 (two).
    Build(s, {300, 77, 130}, rng);
    const int64_t w = s.heads * s.head_dim, n = 40;
    // Decodes of all three, and 40 prompt rows of sequence 0 ahead of them.
    const std::vector<Part> decodes = {{0, 1, 300, 299}, {1, 1, 77, 76}, {2, 1, 130, 129}};
    const std::vector<Part> mixed = {{0, n, 260}, {1, 1, 77, 76}, {2, 1, 130, 129}, {0, 1, 300, 299}};
    KeyLanes(false);
    const std::vector<float> warp_rows = Run(mixed, 0);
    KeyLanes(true);
    const std::vector<float> got = Run(mixed, 0), ref = Run(mixed, 1);
    EXPECT_LE(WorstRowError(got, ref, s.head_dim), 1e-4) << "against the reference";
    EXPECT_LE(WorstRowError(got, warp_rows, s.head_dim), 1e-4) << "against the warp-per-key kernel";
    // Rows of one chunk (sequence 1) in a launch of three: finished by the
    // chunk kernel (the default) or by the merge (LLMHOST_CUDA_ONE_CHUNK=off),
    // the same bits.
    for (const char* one : {"on", "off"}) {
      setenv("LLMHOST_CUDA_ONE_CHUNK", one, 1);
      KeyLanes(false);
      const std::vector<float> warps = Run(mixed, 0);
      KeyLanes(true);
      const std::vector<float> lanes = Run(mixed, 0);
      unsetenv("LLMHOST_CUDA_ONE_CHUNK");
      EXPECT_EQ(0, std::memcmp(lanes.data(), got.data(), got.size() * 4)) << "one-chunk rows done " << one;
      EXPECT_EQ(0, std::memcmp(warps.data(), warp_rows.data(), got.size() * 4)) << "warps, one-chunk rows done " << one;
    }
    // K read directly (LLMHOST_CUDA_KEY_LANES_STAGE_K=off; staged through
    // shared memory by default for 16-bit K and groups of up to 4 heads), V
    // read directly (LLMHOST_CUDA_KEY_LANES_STAGE_V=off; staged by default), the kernel built for
    // ptxas's count of blocks an SM (LLMHOST_CUDA_KEY_LANES_BLOCKS=0; 8 by
    // default): the same bits.
    struct Variant {
      const char *blocks, *stage_k, *stage_v;  // "": the default
    };
    for (const Variant& v : {Variant{"0", "", ""}, Variant{"", "off", ""}, Variant{"0", "off", ""},
                             Variant{"", "", "off"}, Variant{"0", "", "off"}}) {
      SCOPED_TRACE(std::string("blocks '") + v.blocks + "' K staged '" + v.stage_k + "' V staged '" + v.stage_v + "'");
      const std::pair<const char*, const char*> vars[] = {{"LLMHOST_CUDA_KEY_LANES_BLOCKS", v.blocks},
                                                          {"LLMHOST_CUDA_KEY_LANES_STAGE_K", v.stage_k},
                                                          {"LLMHOST_CUDA_KEY_LANES_STAGE_V", v.stage_v}};
      for (const auto& [name, value] : vars) {
        if (*value != 0) setenv(name, value, 1);
      }
      const std::vector<float> variant = Run(mixed, 0);
      for (const auto& [name, value] : vars) unsetenv(name);
      EXPECT_EQ(0, std::memcmp(variant.data(), got.data(), got.size() * 4));
    }
    // The chunks merged a block a head (LLMHOST_CUDA_MERGE=block): the same bits.
    setenv("LLMHOST_CUDA_MERGE", "block", 1);
    KeyLanes(false);
    const std::vector<float> warps_block_merge = Run(mixed, 0);
    KeyLanes(true);
    const std::vector<float> lanes_block_merge = Run(mixed, 0);
    unsetenv("LLMHOST_CUDA_MERGE");
    EXPECT_EQ(0, std::memcmp(lanes_block_merge.data(), got.data(), got.size() * 4)) << "merged a block a head";
    EXPECT_EQ(0, std::memcmp(warps_block_merge.data(), warp_rows.data(), got.size() * 4))
        << "warps, merged a block a head";
    // Each decode alone, and all three together, give the same bits as in the mixed batch.
    const std::vector<float> together = Run(decodes, 0);
    for (int i = 0; i < 3; ++i) {
      const std::vector<float> alone = Run({decodes[static_cast<size_t>(i)]}, 0);
      const int64_t in_mixed = i == 0 ? n + 2 : n + i - 1;
      EXPECT_EQ(0, std::memcmp(alone.data(), Rows(got, in_mixed, 1).data(), w * 4)) << "decode " << i << " in a batch";
      EXPECT_EQ(0, std::memcmp(alone.data(), Rows(together, i, 1).data(), w * 4)) << "decode " << i << " beside decodes";
    }
    // The prompt rows in two chunks of the prompt.
    const std::vector<float> c1 = Run({{0, 15, 235}}, 0), c2 = Run({{0, n - 15, 260}}, 0);
    EXPECT_EQ(0, std::memcmp(c1.data(), got.data(), c1.size() * 4)) << "first prompt chunk";
    EXPECT_EQ(0, std::memcmp(c2.data(), Rows(got, 15, n - 15).data(), c2.size() * 4)) << "second prompt chunk";
  }
}

// More chunks than a warp has lanes (5,000 keys: 40 chunks), where a lane
// reads several chunks' m and l: the warp-a-head merge gives the block-a-head
// merge's bits (K or V read directly the staged ones') and stays within the
// reference's bound.
TEST_F(KeyLanesAttentionTest, ManyChunksMergeAlikeEitherWay) {
  std::mt19937 rng(35);
  for (const Shape& s : {Shape{8, 2, 64, 0, 0.0f, DType::kBF16}, Shape{4, 4, 128, 4500, 0.0f, DType::kF16}}) {
    devs_.clear();
    caches_.clear();
    tables_.clear();
    q_.clear();
    SCOPED_TRACE("d " + std::to_string(s.head_dim) + " window " + std::to_string(s.window));
    Build(s, {5000, 40}, rng);
    const std::vector<Part> decodes = {{0, 1, 5000, 4999}, {1, 1, 40, 39}};
    const std::vector<float> warp_merge = Run(decodes, 0), ref = Run(decodes, 1);
    setenv("LLMHOST_CUDA_MERGE", "block", 1);
    const std::vector<float> block_merge = Run(decodes, 0);
    unsetenv("LLMHOST_CUDA_MERGE");
    setenv("LLMHOST_CUDA_KEY_LANES_STAGE_K", "off", 1);
    const std::vector<float> direct = Run(decodes, 0);
    unsetenv("LLMHOST_CUDA_KEY_LANES_STAGE_K");
    EXPECT_EQ(0, std::memcmp(warp_merge.data(), direct.data(), warp_merge.size() * 4)) << "K read directly";
    setenv("LLMHOST_CUDA_KEY_LANES_STAGE_V", "off", 1);
    const std::vector<float> values_direct = Run(decodes, 0);
    unsetenv("LLMHOST_CUDA_KEY_LANES_STAGE_V");
    EXPECT_EQ(0, std::memcmp(warp_merge.data(), values_direct.data(), warp_merge.size() * 4)) << "V read directly";
    EXPECT_LE(WorstRowError(warp_merge, ref, s.head_dim), 1e-4) << "against the reference";
    EXPECT_EQ(0, std::memcmp(warp_merge.data(), block_merge.data(), warp_merge.size() * 4));
  }
}

}  // namespace
}  // namespace llmhost::key_lanes_attention_test
