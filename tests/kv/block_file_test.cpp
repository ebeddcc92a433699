// The block file format: a standard safetensors file (checked with the
// project's generic safetensors parser), its metadata, and every kind of
// rejection of bad bytes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "kv/block_file.h"
#include "kv/tiered_block_store.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::block_file_test {
namespace {

using nlohmann::json;

BlockMeta TinyMeta() {
  BlockMeta m;
  m.key = Sha256Of("tiny block");
  m.fingerprint = Sha256Of("tiny model");
  m.model = "tiny";
  m.n_layers = 1;
  m.block_size = 2;
  m.kv_dim = 2;
  m.token_count = 2;
  return m;
}

std::vector<uint8_t> TinyData() {  // 2 x 1 x 2 x 2 F32 = 32 bytes
  std::vector<uint8_t> d(32);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(i * 7 + 1);
  return d;
}

uint64_t HeaderLength(const std::vector<uint8_t>& f) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | f[i];
  return n;
}

json HeaderJson(const std::vector<uint8_t>& f) {
  uint64_t n = HeaderLength(f);
  return json::parse(f.begin() + 8, f.begin() + 8 + static_cast<ptrdiff_t>(n));
}

// The file with its JSON header replaced by `h` (data kept).
std::vector<uint8_t> WithHeader(const std::vector<uint8_t>& f, const json& h) {
  uint64_t n = HeaderLength(f);
  std::string text = h.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(text.size() >> (8 * i));
  bytes += text;
  bytes.append(f.begin() + 8 + static_cast<ptrdiff_t>(n), f.end());
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

Status Decode(const std::vector<uint8_t>& f) {
  BlockMeta m;
  std::vector<uint8_t> d;
  return DecodeBlockFile(f, &m, &d);
}

TEST(BlockMetaTest, DataBytesAndShape) {
  BlockMeta m = TinyMeta();
  EXPECT_EQ(m.data_bytes(), 32u);
  m.dtype = "F16";
  EXPECT_EQ(m.data_bytes(), 16u);
  m.dtype = "Q4_K";
  EXPECT_EQ(m.data_bytes(), 0u);
  m = TinyMeta();
  m.n_layers = int64_t{1} << 40;
  m.kv_dim = int64_t{1} << 40;
  EXPECT_EQ(m.data_bytes(), 0u) << "overflow must not wrap";
  m.n_layers = -1;
  EXPECT_EQ(m.data_bytes(), 0u);

  BlockMeta a = TinyMeta(), b = TinyMeta();
  b.model = "another name";
  b.key = Sha256Of("other");
  EXPECT_TRUE(a.SameShape(b));  // the model name and key do not count
  b.fingerprint = Sha256Of("x");
  EXPECT_FALSE(a.SameShape(b));
  b = a;
  b.kv_dim = 4;
  EXPECT_FALSE(a.SameShape(b));
  b = a;
  b.dtype = "F16";
  EXPECT_FALSE(a.SameShape(b));
}

TEST(CacheModeTest, ParseAndName) {
  for (CacheMode m : {CacheMode::kWriteBack, CacheMode::kWriteThrough, CacheMode::kHotOnly,
                      CacheMode::kOff}) {
    auto r = ParseCacheMode(CacheModeName(m));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, m);
  }
  auto bad = ParseCacheMode("writeback");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("write-through"), std::string::npos);
}

TEST(BlockFileTest, RoundTripIsStandardSafetensors) {
  BlockMeta meta = TinyMeta();
  std::vector<uint8_t> data = TinyData();
  std::vector<uint8_t> f = EncodeBlockFile(meta, data);
  uint64_t n = HeaderLength(f);
  EXPECT_EQ((8 + n) % 8, 0u) << "data must start 8-aligned";
  EXPECT_EQ(f.size(), 8 + n + 32);

  // The generic safetensors reader sees one F32 tensor "kv" [2, 1, 2, 2].
  auto st = SafetensorsFile::Parse(f.data(), f.size(), "block");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_EQ((*st)->tensors().size(), 1u);
  const SafetensorsTensorInfo& t = (*st)->tensors()[0];
  EXPECT_EQ(t.name, "kv");
  EXPECT_EQ(t.dtype, DType::kF32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 1, 2, 2}));
  const auto& md = (*st)->metadata();
  EXPECT_EQ(md.at("format"), "llmhost-kv-block");
  EXPECT_EQ(md.at("format_version"), "1");
  EXPECT_EQ(md.at("block_key"), ToHex(meta.key));
  EXPECT_EQ(md.at("fingerprint"), ToHex(meta.fingerprint));
  EXPECT_EQ(md.at("model"), "tiny");
  EXPECT_EQ(md.at("token_count"), "2");
  EXPECT_EQ(md.at("n_layers"), "1");
  EXPECT_EQ(md.at("block_size"), "2");
  EXPECT_EQ(md.at("kv_dim"), "2");
  EXPECT_EQ(md.at("dtype"), "F32");
  EXPECT_EQ(md.at("data_sha256"),
            ToHex(Sha256Of(std::string_view(reinterpret_cast<const char*>(data.data()), 32))));
  EXPECT_FALSE(md.at("created_at").empty());

  BlockMeta got;
  std::vector<uint8_t> got_data;
  ASSERT_TRUE(DecodeBlockFile(f, &got, &got_data).ok());
  EXPECT_EQ(got.key, meta.key);
  EXPECT_EQ(got.model, "tiny");
  EXPECT_TRUE(got.SameShape(meta));
  EXPECT_EQ(got_data, data);

  // The header alone (what the startup scan reads) is enough for the meta.
  std::vector<uint8_t> head(f.begin(), f.begin() + static_cast<ptrdiff_t>(8 + n));
  BlockMeta hm;
  uint64_t header_bytes = 0;
  ASSERT_TRUE(DecodeBlockFileHeader(head, &hm, &header_bytes).ok());
  EXPECT_EQ(header_bytes, 8 + n);
  EXPECT_EQ(hm.key, meta.key);
  EXPECT_TRUE(hm.SameShape(meta));
}

// The fuzz seeds were written by a separate Python script (not by
// EncodeBlockFile): an independent writer of the format.
TEST(BlockFileTest, DecodesFilesOfAnIndependentWriter) {
  std::string dir = std::string(LLMHOST_SOURCE_DIR) + "/fuzz/corpus/block_file_fuzz/";
  auto f32 = ReadFileToString(dir + "seed_f32.safetensors");
  ASSERT_TRUE(f32.ok()) << f32.status().ToString();
  std::vector<uint8_t> f(f32->begin(), f32->end());
  BlockMeta m;
  std::vector<uint8_t> d;
  ASSERT_TRUE(DecodeBlockFile(f, &m, &d).ok());
  EXPECT_EQ(m.key, Sha256Of("seed key 1"));
  EXPECT_EQ(m.fingerprint, Sha256Of("seed model"));
  EXPECT_EQ(m.model, "tiny");
  ASSERT_EQ(d.size(), 32u);
  for (size_t i = 0; i < d.size(); ++i) EXPECT_EQ(d[i], static_cast<uint8_t>(31 + i * 7)) << i;
  auto f16 = ReadFileToString(dir + "seed_f16.safetensors");
  ASSERT_TRUE(f16.ok());
  std::vector<uint8_t> g(f16->begin(), f16->end());
  ASSERT_TRUE(DecodeBlockFile(g, &m, &d).ok());
  EXPECT_EQ(m.dtype, "F16");
  EXPECT_EQ(d.size(), 16u);
  auto cut = ReadFileToString(dir + "seed_truncated.safetensors");
  ASSERT_TRUE(cut.ok());
  std::vector<uint8_t> c(cut->begin(), cut->end());
  EXPECT_EQ(DecodeBlockFile(c, &m, &d).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(DecodeBlockFileHeader(c, &m, nullptr).ok()) << "the header alone is intact";
}

TEST(BlockFileTest, RejectsBadLengthsAndTruncation) {
  std::vector<uint8_t> f = EncodeBlockFile(TinyMeta(), TinyData());
  EXPECT_EQ(Decode({}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Decode({1, 2, 3}).code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> zero(f);
  std::fill(zero.begin(), zero.begin() + 8, 0);
  EXPECT_EQ(Decode(zero).code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> huge(f);
  huge[7] = 0x7f;  // header length ~ 2^62
  EXPECT_EQ(Decode(huge).code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> big(f);
  big[2] = 0x20;  // 2 MiB header: over the 1 MiB limit
  Status s = Decode(big);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // Truncated inside the header, inside the data; a trailing byte.
  uint64_t n = HeaderLength(f);
  std::vector<uint8_t> cut_head(f.begin(), f.begin() + static_cast<ptrdiff_t>(8 + n / 2));
  EXPECT_EQ(Decode(cut_head).code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> cut_data(f.begin(), f.end() - 1);
  s = Decode(cut_data);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.ToString();
  std::vector<uint8_t> longer(f);
  longer.push_back(0);
  EXPECT_EQ(Decode(longer).code(), StatusCode::kInvalidArgument);
}

TEST(BlockFileTest, FlippedDataByteIsCorruption) {
  std::vector<uint8_t> f = EncodeBlockFile(TinyMeta(), TinyData());
  for (size_t pos : {HeaderLength(f) + 8, f.size() - 1}) {
    std::vector<uint8_t> g(f);
    g[pos] ^= 0x01;
    Status s = Decode(g);
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
    EXPECT_NE(s.message().find("SHA-256"), std::string::npos);
  }
}

TEST(BlockFileTest, RejectsBadHeaders) {
  std::vector<uint8_t> f = EncodeBlockFile(TinyMeta(), TinyData());
  json h = HeaderJson(f);
  ASSERT_TRUE(Decode(WithHeader(f, h)).ok()) << "re-serialized header must still decode";
  auto expect_bad = [&](const json& bad, const std::string& why) {
    Status s = Decode(WithHeader(f, bad));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << why << ": " << s.ToString();
  };
  json x = h;
  x["kv"]["shape"] = {2, 1, 2, 3};
  expect_bad(x, "tensor shape differs from metadata");
  x = h;
  x["kv"]["shape"] = {2, 1, 2};
  expect_bad(x, "rank 3");
  x = h;
  x["kv"]["dtype"] = "F16";
  expect_bad(x, "tensor dtype differs");
  x = h;
  x["kv"]["data_offsets"] = {0, 16};
  expect_bad(x, "data_offsets");
  x = h;
  x["__metadata__"]["kv_dim"] = "3";
  expect_bad(x, "metadata kv_dim differs from the tensor");
  x = h;
  x["__metadata__"]["n_layers"] = "1000000000";
  x["kv"]["shape"] = {2, 1000000000, 2, 2};
  expect_bad(x, "absurd layer count");
  x = h;
  x["__metadata__"]["token_count"] = "0";
  expect_bad(x, "token_count 0");
  x = h;
  x["__metadata__"]["block_key"] = "zz";
  expect_bad(x, "block key not hex");
  x = h;
  x["__metadata__"]["format"] = "something-else";
  expect_bad(x, "format");
  x = h;
  x["__metadata__"]["format_version"] = "2";
  expect_bad(x, "version");
  x = h;
  x["__metadata__"]["dtype"] = "Q4";
  x["kv"]["dtype"] = "Q4";
  expect_bad(x, "unknown dtype");
  x = h;
  x["__metadata__"]["n_layers"] = 1;
  expect_bad(x, "metadata value not a string");
  x = h;
  x["__metadata__"].erase("data_sha256");
  expect_bad(x, "missing checksum");
  x = h;
  x["other"] = h["kv"];
  expect_bad(x, "a second tensor");
  expect_bad(json::array({1, 2}), "not an object");
  json deep = json::array();
  for (int i = 0; i < 200; ++i) deep = json::array({deep});
  x = h;
  x["__metadata__"]["model"] = deep;
  expect_bad(x, "deep nesting");

  std::vector<uint8_t> garbage(f);
  garbage[8] = '#';
  EXPECT_EQ(Decode(garbage).code(), StatusCode::kInvalidArgument);

  // A changed checksum in the header: the data no longer matches it.
  x = h;
  x["__metadata__"]["data_sha256"] = ToHex(Sha256Of("not the data"));
  EXPECT_EQ(Decode(WithHeader(f, x)).code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace llmhost::block_file_test
