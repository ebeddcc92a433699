// GGUF reader against the real files in ../shared. Expected values were read
// independently with a small Python struct-based reader and from the files'
// documented layout (see ../shared/README.md).
#include <gtest/gtest.h>

#include <cstring>

#include "formats/gguf.h"
#include "test_util.h"

namespace llmhost::gguf_real_test {
namespace {

std::string TinyGguf(const std::string& type) {
  return testing::SharedDir() + "/reference/models/llama-tiny-gguf/llama-tiny-" + type + ".gguf";
}

float LoadF32(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

struct TinyCase {
  const char* file;
  GgmlType matrix_type;
  int64_t file_type;     // general.file_type (llama_ftype)
  uint64_t data_offset;  // end of tensor infos rounded up to 32
  uint64_t matrix_bytes; // output.weight [256, 907]
};

class LlamaTinyGguf : public ::testing::TestWithParam<TinyCase> {};

TEST_P(LlamaTinyGguf, HeaderMetadataAndTensors) {
  SKIP_IF_NO_SHARED();
  const TinyCase& c = GetParam();
  auto r = GgufFile::Open(TinyGguf(c.file));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const GgufFile& g = **r;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_EQ(g.data_offset(), c.data_offset);

  EXPECT_EQ(*g.GetString("general.architecture"), "llama");
  EXPECT_EQ(*g.GetString("general.name"), "llmhost-reference-llama-gguf");
  EXPECT_EQ(*g.GetInt("llama.block_count"), 2);
  EXPECT_EQ(*g.GetInt("llama.embedding_length"), 256);
  EXPECT_EQ(*g.GetInt("llama.feed_forward_length"), 512);
  EXPECT_EQ(*g.GetInt("llama.attention.head_count"), 4);
  EXPECT_EQ(*g.GetInt("llama.attention.head_count_kv"), 2);
  EXPECT_EQ(*g.GetInt("llama.context_length"), 4096);
  EXPECT_EQ(*g.GetInt("llama.rope.dimension_count"), 64);
  EXPECT_EQ(*g.GetInt("llama.vocab_size"), 907);
  EXPECT_EQ(*g.GetFloat("llama.rope.freq_base"), 10000.0);
  EXPECT_FLOAT_EQ(static_cast<float>(*g.GetFloat("llama.attention.layer_norm_rms_epsilon")), 1e-6f);
  EXPECT_EQ(*g.GetInt("general.file_type"), c.file_type);
  EXPECT_EQ(*g.GetString("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(*g.GetString("tokenizer.ggml.pre"), "llama-bpe");
  EXPECT_EQ(*g.GetInt("tokenizer.ggml.bos_token_id"), 900);
  EXPECT_EQ(*g.GetInt("tokenizer.ggml.eos_token_id"), 904);
  EXPECT_EQ(*g.GetBool("tokenizer.ggml.add_bos_token"), false);
  EXPECT_EQ(g.TypeOf("llama.block_count"), GgufValueType::kUint32);
  EXPECT_EQ(g.ArrayElementType("tokenizer.ggml.token_type"), GgufValueType::kInt32);
  EXPECT_EQ(g.Keys().front(), "general.architecture");

  auto tokens = g.GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 907u);
  EXPECT_EQ((*tokens)[0], "!");
  EXPECT_EQ((*tokens)[256], "\xC4\xA0\xC4\xA0");  // "ĠĠ"
  EXPECT_EQ((*tokens)[900], "<|begin_of_text|>");
  EXPECT_EQ((*tokens)[904], "<|eot_id|>");
  EXPECT_EQ((*tokens)[906], "<|python_tag|>");
  auto types = g.GetIntArray("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.ok());
  ASSERT_EQ(types->size(), 907u);
  EXPECT_EQ((*types)[899], 1);
  EXPECT_EQ((*types)[900], 4);
  auto merges = g.GetStringArray("tokenizer.ggml.merges");
  ASSERT_TRUE(merges.ok());
  ASSERT_EQ(merges->size(), 644u);
  EXPECT_EQ((*merges)[0], "\xC4\xA0 \xC4\xA0");  // "Ġ Ġ"
  EXPECT_EQ((*merges)[643], ". o");

  ASSERT_EQ(g.tensors().size(), 21u);
  const GgufTensorInfo* out = g.FindTensor("output.weight");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->type, c.matrix_type);
  EXPECT_EQ(out->shape, (std::vector<uint64_t>{256, 907}));
  EXPECT_EQ(out->n_elements, 256u * 907u);
  EXPECT_EQ(out->n_bytes, c.matrix_bytes);
  const GgufTensorInfo* down = g.FindTensor("blk.1.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->type, c.matrix_type);
  EXPECT_EQ(down->shape, (std::vector<uint64_t>{512, 256}));
  const GgufTensorInfo* norm = g.FindTensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->type, GgmlType::kF32);
  EXPECT_EQ(norm->shape, (std::vector<uint64_t>{256}));
  EXPECT_EQ(norm->n_bytes, 1024u);
  EXPECT_EQ(g.FindTensor("blk.2.attn_q.weight"), nullptr);

  // Every tensor lies inside the file, and the last one ends at its end.
  uint64_t end = 0;
  for (const GgufTensorInfo& t : g.tensors()) {
    EXPECT_EQ(t.offset % 32, 0u) << t.name;
    end = std::max(end, g.data_offset() + t.offset + t.n_bytes);
  }
  EXPECT_EQ(end, g.size());
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, LlamaTinyGguf,
    ::testing::Values(TinyCase{"f32", GgmlType::kF32, 0, 24672, 907u * 256 * 4},
                      TinyCase{"q8_0", GgmlType::kQ8_0, 7, 24704, 907u * 8 * 34},
                      TinyCase{"q4_0", GgmlType::kQ4_0, 2, 24704, 907u * 8 * 18},
                      TinyCase{"q4_k", GgmlType::kQ4_K, 15, 24704, 907u * 144},
                      TinyCase{"q6_k", GgmlType::kQ6_K, 18, 24704, 907u * 210}),
    [](const ::testing::TestParamInfo<TinyCase>& info) { return std::string(info.param.file); });

TEST(GgufReal, TensorDataPointsAtTheRightBytes) {
  SKIP_IF_NO_SHARED();
  auto f32 = GgufFile::Open(TinyGguf("f32"));
  ASSERT_TRUE(f32.ok()) << f32.status().ToString();
  const GgufTensorInfo* norm = (*f32)->FindTensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->offset, 1857536u);
  const uint8_t* p = (*f32)->TensorData(*norm);
  EXPECT_EQ(LoadF32(p), 1.109375f);
  EXPECT_EQ(LoadF32(p + 4), 1.0f);
  EXPECT_EQ(LoadF32(p + 8), 0.98828125f);

  auto q8 = GgufFile::Open(TinyGguf("q8_0"));
  ASSERT_TRUE(q8.ok());
  const GgufTensorInfo* emb = (*q8)->FindTensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  const uint8_t* b = (*q8)->TensorData(*emb);
  // Block 0: f16 scale then 32 int8 quants: 0, 15, -14, -45, ...
  EXPECT_EQ(static_cast<int8_t>(b[2]), 0);
  EXPECT_EQ(static_cast<int8_t>(b[3]), 15);
  EXPECT_EQ(static_cast<int8_t>(b[4]), -14);
  EXPECT_EQ(static_cast<int8_t>(b[5]), -45);
}

TEST(GgufReal, Stories260K) {
  SKIP_IF_NO_SHARED();
  auto r = GgufFile::Open(testing::SharedDir() + "/models/stories260K/stories260K.gguf");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const GgufFile& g = **r;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.Keys().size(), 19u);
  EXPECT_EQ(g.Keys().front(), "tokenizer.ggml.tokens");
  EXPECT_EQ(g.data_offset(), 14176u);
  EXPECT_EQ(*g.GetString("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(*g.GetInt("llama.block_count"), 5);
  EXPECT_EQ(*g.GetInt("llama.embedding_length"), 64);
  EXPECT_EQ(*g.GetInt("llama.feed_forward_length"), 172);
  EXPECT_EQ(*g.GetInt("llama.attention.head_count"), 8);
  EXPECT_EQ(*g.GetInt("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(*g.GetInt("llama.rope.dimension_count"), 8);
  EXPECT_FLOAT_EQ(static_cast<float>(*g.GetFloat("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_EQ(*g.GetInt("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(*g.GetInt("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_EQ(*g.GetInt("tokenizer.ggml.unknown_token_id"), 0);
  EXPECT_EQ(*g.GetInt("tokenizer.ggml.padding_token_id"), 4294967295);  // uint32 -1
  EXPECT_FALSE(g.Has("general.alignment"));

  auto tokens = g.GetStringArray("tokenizer.ggml.tokens");
  auto scores = g.GetFloatArray("tokenizer.ggml.scores");
  auto types = g.GetIntArray("tokenizer.ggml.token_type");
  ASSERT_TRUE(tokens.ok() && scores.ok() && types.ok());
  ASSERT_EQ(tokens->size(), 512u);
  ASSERT_EQ(scores->size(), 512u);
  ASSERT_EQ(types->size(), 512u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ((*tokens)[2], "</s>");
  EXPECT_EQ((*tokens)[3], "<0x00>");
  EXPECT_EQ((*tokens)[258], "<0xFF>");
  EXPECT_EQ((*tokens)[259], "\xE2\x96\x81t");   // "▁t"
  EXPECT_EQ((*tokens)[300], "\xE2\x96\x81ha");  // "▁ha"
  EXPECT_EQ((*tokens)[511], "\xE2\x80\x8A");    // U+200A
  EXPECT_EQ((*scores)[300], -41.0);
  EXPECT_EQ((*scores)[511], -252.0);
  EXPECT_EQ((*types)[0], 2);
  EXPECT_EQ((*types)[1], 3);
  EXPECT_EQ((*types)[3], 6);
  EXPECT_EQ((*types)[300], 1);

  ASSERT_EQ(g.tensors().size(), 48u);
  EXPECT_EQ(g.tensors()[0].name, "token_embd.weight");
  EXPECT_EQ(g.tensors()[0].shape, (std::vector<uint64_t>{64, 512}));
  const GgufTensorInfo* gate = g.FindTensor("blk.4.ffn_gate.weight");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->shape, (std::vector<uint64_t>{64, 172}));
  EXPECT_EQ(gate->offset, 1038848u);
  const uint8_t* emb = g.TensorData(g.tensors()[0]);
  EXPECT_FLOAT_EQ(LoadF32(emb), -0.29474878f);
  EXPECT_FLOAT_EQ(LoadF32(emb + 4), 0.5618956f);
  const GgufTensorInfo* norm = g.FindTensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_FLOAT_EQ(LoadF32(g.TensorData(*norm)), 2.458309f);
}

TEST(GgufReal, DescribeValueAbbreviatesArrays) {
  SKIP_IF_NO_SHARED();
  auto r = GgufFile::Open(TinyGguf("q4_k"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->DescribeValue("general.architecture"), "\"llama\"");
  EXPECT_EQ((*r)->DescribeValue("llama.block_count"), "2");
  EXPECT_EQ((*r)->DescribeValue("llama.rope.freq_base"), "10000");
  EXPECT_EQ((*r)->DescribeValue("tokenizer.ggml.add_bos_token"), "false");
  EXPECT_EQ((*r)->DescribeValue("tokenizer.ggml.tokens"),
            "[\"!\", \"\\\"\", \"#\", ... (907 string)]");
  EXPECT_EQ((*r)->DescribeValue("tokenizer.ggml.token_type"), "[1, 1, 1, ... (907 int32)]");
  EXPECT_EQ((*r)->DescribeValue("no.such.key"), "");
}

}  // namespace
}  // namespace llmhost::gguf_real_test
