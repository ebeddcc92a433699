// safetensors reader: real fixtures, every dtype, and one test per way a file
// can be broken (validation rules of huggingface/safetensors).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "formats/safetensors.h"
#include "test_util.h"

namespace llmhost::safetensors_test {
namespace {

using ::testing::HasSubstr;

// 8-byte little-endian length + header + data.
std::string Image(const std::string& header, const std::string& data = "") {
  std::string out;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + header + data;
}

Result<std::unique_ptr<SafetensorsFile>> ParseString(const std::string& bytes) {
  return SafetensorsFile::Parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                "x.safetensors");
}

void ExpectError(const std::string& bytes, StatusCode code, const std::string& needle) {
  auto r = ParseString(bytes);
  ASSERT_FALSE(r.ok()) << "parsed: " << bytes.substr(8);
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_THAT(r.status().message(), HasSubstr("x.safetensors"));
  EXPECT_THAT(r.status().message(), HasSubstr(needle));
}

std::string Entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  uint64_t b, uint64_t e) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":[" + std::to_string(b) + "," + std::to_string(e) + "]}";
}

// "{e1,e2,...}" (built with append: GCC 12 warns falsely on "{" + temporary).
std::string Obj(std::initializer_list<std::string> entries) {
  std::string out = "{";
  for (const std::string& e : entries) {
    if (out.size() > 1) out += ",";
    out += e;
  }
  out += "}";
  return out;
}

TEST(SafetensorsParse, MinimalFileAndViews) {
  std::string data(24, '\0');
  for (int i = 0; i < 24; ++i) data[i] = static_cast<char>(i);
  std::string bytes = Image("{\"__metadata__\":{\"format\":\"pt\"}," +
                                Entry("b", "I16", "[2,2]", 16, 24) + "," +
                                Entry("a", "F32", "[1,4]", 0, 16) + "}   ",
                            data);
  auto r = ParseString(bytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const SafetensorsFile& f = **r;
  EXPECT_EQ(f.metadata().at("format"), "pt");
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[0].name, "a");  // sorted by offset
  EXPECT_EQ(f.data_size(), 24u);
  auto b = f.Tensor("b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->dtype, DType::kI16);
  EXPECT_EQ(b->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(b->NumElements(), 4);
  EXPECT_EQ(b->n_bytes, 8u);
  EXPECT_EQ(b->data, reinterpret_cast<const uint8_t*>(bytes.data()) + f.data_offset() + 16);
  EXPECT_EQ(b->data[0], 16);
  EXPECT_EQ(f.Tensor("c").status().code(), StatusCode::kNotFound);
}

TEST(SafetensorsParse, EmptyAndZeroSizedTensors) {
  auto empty = ParseString(Image("{}      "));
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE((*empty)->tensors().empty());
  auto zero = ParseString(Image(Obj({Entry("z", "F32", "[0,3]", 0, 0),
                                     Entry("s", "F64", "[]", 0, 8)}),
                                std::string(8, '\0')));
  ASSERT_TRUE(zero.ok()) << zero.status().ToString();
  EXPECT_EQ((*zero)->Find("z")->n_bytes(), 0u);
  EXPECT_EQ((*zero)->Find("s")->NumElements(), 1);  // a scalar
}

TEST(SafetensorsParse, EveryDType) {
  struct Case { const char* name; DType type; size_t size; };
  const Case cases[] = {
      {"F64", DType::kF64, 8}, {"F32", DType::kF32, 4}, {"F16", DType::kF16, 2},
      {"BF16", DType::kBF16, 2}, {"I8", DType::kI8, 1}, {"I16", DType::kI16, 2},
      {"I32", DType::kI32, 4}, {"I64", DType::kI64, 8}, {"U8", DType::kU8, 1},
      {"U16", DType::kU16, 2}, {"U32", DType::kU32, 4}, {"U64", DType::kU64, 8},
      {"BOOL", DType::kBool, 1}, {"F8_E4M3", DType::kF8_E4M3, 1},
      {"F8_E5M2", DType::kF8_E5M2, 1}};
  static_assert(std::size(cases) == kNumDTypes);
  for (const Case& c : cases) {
    EXPECT_EQ(DTypeFromName(c.name), c.type) << c.name;
    EXPECT_STREQ(DTypeName(c.type), c.name);
    EXPECT_EQ(DTypeSize(c.type), c.size) << c.name;
    auto r = ParseString(Image(Obj({Entry("t", c.name, "[3]", 0, 3 * c.size)}),
                               std::string(3 * c.size, '\0')));
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    EXPECT_EQ((*r)->tensors()[0].dtype, c.type);
  }
  EXPECT_FALSE(DTypeFromName("bf16").has_value());
}

TEST(SafetensorsMalformed, Framing) {
  ExpectError("", StatusCode::kCorruption, "shorter than the 8-byte header length");
  ExpectError(std::string(7, '\0'), StatusCode::kCorruption, "7 bytes");
  std::string past = Image("{}");
  past[0] = 100;
  ExpectError(past, StatusCode::kCorruption, "runs past the end of the file");
  std::string huge(16, '\0');
  uint64_t n = 100'000'001;
  std::memcpy(huge.data(), &n, 8);
  ExpectError(huge, StatusCode::kCorruption, "exceeds the limit of 100000000 bytes");
  std::string max(16, '\xff');
  ExpectError(max, StatusCode::kCorruption, "exceeds the limit");
}

TEST(SafetensorsMalformed, HeaderJson) {
  ExpectError(Image("{\"a\":"), StatusCode::kCorruption, "header: not valid JSON");
  ExpectError(Image("{\"\xff\":1}"), StatusCode::kCorruption, "not valid JSON");
  ExpectError(Image("[1,2]"), StatusCode::kCorruption, "not a JSON object");
  ExpectError(Image("{\"t\":[]}"), StatusCode::kCorruption, "tensor 't': entry is not a JSON object");
  ExpectError(Image("{\"__metadata__\":[]}"), StatusCode::kCorruption, "__metadata__ is not an object");
  ExpectError(Image("{\"__metadata__\":{\"k\":1}}"), StatusCode::kCorruption,
              "__metadata__ value of 'k' is not a string");
}

TEST(SafetensorsMalformed, TensorFields) {
  std::string d8(8, '\0');
  ExpectError(Image(Obj({Entry("t", "Q4", "[8]", 0, 8)}), d8), StatusCode::kNotSupported,
              "tensor 't': unknown dtype 'Q4'");
  ExpectError(Image("{\"t\":{\"shape\":[8],\"data_offsets\":[0,8]}}", d8),
              StatusCode::kCorruption, "missing field 'dtype'");
  ExpectError(Image("{\"t\":{\"dtype\":\"U8\",\"data_offsets\":[0,8]}}", d8),
              StatusCode::kCorruption, "missing field 'shape'");
  ExpectError(Image("{\"t\":{\"dtype\":\"U8\",\"shape\":[8]}}", d8), StatusCode::kCorruption,
              "missing field 'data_offsets'");
  ExpectError(Image("{\"t\":{\"dtype\":7,\"shape\":[8],\"data_offsets\":[0,8]}}", d8),
              StatusCode::kCorruption, "'dtype' is not a string");
  ExpectError(Image("{\"t\":{\"dtype\":\"U8\",\"shape\":8,\"data_offsets\":[0,8]}}", d8),
              StatusCode::kCorruption, "'shape' is not an array");
  ExpectError(Image(Obj({Entry("t", "U8", "[8.5]", 0, 8)}), d8), StatusCode::kCorruption,
              "not a non-negative integer");
  ExpectError(Image(Obj({Entry("t", "U8", "[-8]", 0, 8)}), d8), StatusCode::kCorruption,
              "negative dimension -8");
  ExpectError(Image("{\"t\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0]}}", d8),
              StatusCode::kCorruption, "'data_offsets' is not [begin, end]");
  ExpectError(Image("{\"t\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,-8]}}", d8),
              StatusCode::kCorruption, "not non-negative integers");
}

TEST(SafetensorsMalformed, OffsetsAndSizes) {
  std::string d8(8, '\0');
  ExpectError(Image(Obj({Entry("t", "U8", "[0]", 8, 0)}), d8), StatusCode::kCorruption,
              "end 0 is before begin 8");
  ExpectError(Image(Obj({Entry("t", "U8", "[16]", 0, 16)}), d8), StatusCode::kCorruption,
              "past the end of the file");
  ExpectError(Image(Obj({Entry("t", "F32", "[3]", 0, 8)}), d8), StatusCode::kCorruption,
              "shape [3] of F32 needs 12 bytes but data_offsets span 8");
  ExpectError(Image(Obj({Entry("t", "F32", "[4294967296,4294967296,16]", 0, 0)})),
              StatusCode::kCorruption, "overflows");
  ExpectError(Image(Obj({Entry("a", "U8", "[6]", 0, 6), Entry("b", "U8", "[4]", 4, 8)}), d8),
              StatusCode::kCorruption, "'b' (bytes 4..8) overlaps tensor 'a'");
  ExpectError(Image(Obj({Entry("a", "U8", "[4]", 0, 4), Entry("b", "U8", "[2]", 6, 8)}), d8),
              StatusCode::kCorruption, "2-byte hole");
  ExpectError(Image(Obj({Entry("a", "U8", "[4]", 4, 8)}), d8), StatusCode::kCorruption,
              "hole");
  ExpectError(Image(Obj({Entry("a", "U8", "[4]", 0, 4)}), d8), StatusCode::kCorruption,
              "tensors cover 4 bytes but the data section has 8 bytes");
}

TEST(SafetensorsMalformed, EveryTruncationFails) {
  std::string bytes = Image(Obj({Entry("a", "F32", "[2]", 0, 8)}), std::string(8, 'x'));
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(ParseString(bytes.substr(0, n)).ok()) << n;
  }
}

TEST(SafetensorsReal, LlamaTiny) {
  SKIP_IF_NO_SHARED();
  auto r = SafetensorsFile::Open(testing::SharedDir() +
                                 "/reference/models/llama3-tiny/model.safetensors");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const SafetensorsFile& f = **r;
  EXPECT_EQ(f.header_size(), 2160u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.tensors().size(), 21u);
  EXPECT_EQ(f.tensors().front().name, "lm_head.weight");
  EXPECT_EQ(f.data_offset() + f.data_size(), 382456u);  // the file size
  auto emb = f.Tensor("model.embed_tokens.weight");
  ASSERT_TRUE(emb.ok());
  EXPECT_EQ(emb->dtype, DType::kBF16);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{907, 64}));
  EXPECT_EQ(emb->n_bytes, 116096u);
  const uint8_t kFirst[] = {0xd1, 0xbd, 0x53, 0x3e, 0x91, 0xbd, 0xca, 0x3c};
  EXPECT_EQ(std::memcmp(emb->data, kFirst, 8), 0);
  const SafetensorsTensorInfo* k = f.Find("model.layers.0.self_attn.k_proj.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(k->begin, 281600u);
  EXPECT_EQ(k->end, 285696u);
}

TEST(SafetensorsReal, MlxQuantizedDtypes) {
  SKIP_IF_NO_SHARED();
  auto r = SafetensorsFile::Open(testing::SharedDir() +
                                 "/reference/models/llama3-tiny-mlx4/model.safetensors");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->metadata().at("format"), "mlx");
  const SafetensorsTensorInfo* w = (*r)->Find("model.embed_tokens.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::kU32);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{907, 8}));  // 64 4-bit values in 8 words
  const SafetensorsTensorInfo* s = (*r)->Find("model.embed_tokens.scales");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->dtype, DType::kBF16);
  EXPECT_EQ(s->shape, (std::vector<int64_t>{907, 2}));  // group size 32
  EXPECT_EQ(s->begin, 105796u);
}

}  // namespace
}  // namespace llmhost::safetensors_test
