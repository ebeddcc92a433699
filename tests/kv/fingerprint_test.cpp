// Weights identity and model fingerprint: stable for the same files, changed
// by a byte inside any of the 16 windows, by config.json, by a file's name or
// size, by the KV layout; unchanged by a byte between windows (the identity
// reads only the windows, by design).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "backend/cpu/cpu_backend.h"
#include "kv/fingerprint.h"
#include "model/model_test_util.h"

namespace llmhost::fingerprint_test {
namespace {

namespace fs = std::filesystem;

using TempDir = testing::ScopedTempDir;

void FlipByte(const std::string& file, uint64_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.good()) << file;
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

std::string CopyFixture(const std::string& name, const std::string& dir) {
  const std::string dst = dir + "/" + name;
  fs::copy(testing::ModelsRoot() + "/" + name, dst, fs::copy_options::recursive);
  return dst;
}

Sha256Digest Identity(const std::string& path) {
  auto id = SampledWeightsIdentity(path);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return id.ok() ? *id : Sha256Digest{};
}

TEST(FingerprintTest, ModelDirectoryChangesWithWeightsAndConfig) {
  TempDir tmp;
  const std::string a = CopyFixture("llama3-tiny", tmp.path());
  const Sha256Digest base = Identity(a);
  EXPECT_EQ(Identity(a), base);  // deterministic

  // The same files under another directory name: the same identity.
  const std::string b = tmp.path() + "/elsewhere";
  fs::copy(a, b, fs::copy_options::recursive);
  EXPECT_EQ(Identity(b), base);

  // One weight byte in the middle of the file (inside a window: a small
  // file's windows overlap and cover it all).
  const std::string weights = b + "/model.safetensors";
  const uint64_t size = fs::file_size(weights);
  FlipByte(weights, size / 2);
  EXPECT_NE(Identity(b), base);
  FlipByte(weights, size / 2);
  EXPECT_EQ(Identity(b), base);
  FlipByte(weights, size - 1);  // the last window ends at the last byte
  EXPECT_NE(Identity(b), base);
  FlipByte(weights, size - 1);

  // config.json, byte for byte.
  auto cfg = ReadFileToString(b + "/config.json");
  ASSERT_TRUE(cfg.ok());
  ASSERT_TRUE(WriteFileAtomic(b + "/config.json", *cfg + " ").ok());
  EXPECT_NE(Identity(b), base);
  ASSERT_TRUE(WriteFileAtomic(b + "/config.json", *cfg).ok());
  EXPECT_EQ(Identity(b), base);

  // A renamed weight file.
  fs::rename(weights, b + "/model-renamed.safetensors");
  EXPECT_NE(Identity(b), base);
}

TEST(FingerprintTest, LargeFileReadsOnlyItsWindows) {
  TempDir tmp;
  const std::string file = tmp.path() + "/big.gguf";
  const uint64_t size = 32ull << 20;  // 32 MiB: windows every ~2 MiB
  {
    std::ofstream f(file, std::ios::binary);
    std::string chunk(1 << 20, '\0');
    for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>(i * 131 % 251);
    for (uint64_t i = 0; i < size / chunk.size(); ++i) f.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  }
  const Sha256Digest base = Identity(file);
  const uint64_t w = kIdentityWindowBytes;
  const uint64_t step = (size - w) / (kIdentityWindows - 1);
  // Inside window 3, and between windows 3 and 4.
  FlipByte(file, 3 * step + 100);
  const Sha256Digest inside = Identity(file);
  EXPECT_NE(inside, base);
  FlipByte(file, 3 * step + 100);
  FlipByte(file, 3 * step + w + (step - w) / 2);
  EXPECT_EQ(Identity(file), base);
  // The size is part of the identity.
  fs::resize_file(file, size + 1);
  EXPECT_NE(Identity(file), base);
}

TEST(FingerprintTest, LayoutAndErrors) {
  TempDir tmp;
  const std::string dir = CopyFixture("llama3-tiny", tmp.path());
  CpuBackend backend(nullptr);
  auto m = Model::Load(dir, &backend);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto f256 = SampledModelFingerprint(**m, 256);
  auto f16 = SampledModelFingerprint(**m, 16);
  ASSERT_TRUE(f256.ok() && f16.ok());
  EXPECT_NE(*f256, *f16);
  EXPECT_EQ(*SampledModelFingerprint(**m, 256), *f256);

  KvLayout l = LayoutOf(**m, 256);
  EXPECT_EQ(l.n_layers, 2);
  EXPECT_EQ(l.windows.size(), 2u);
  const Sha256Digest w = Identity(dir);
  EXPECT_EQ(ModelFingerprint(w, l), *f256);
  KvLayout other = l;
  other.kv_dtype = "bf16";
  EXPECT_NE(ModelFingerprint(w, other), *f256);
  other = l;
  other.windows[1] = 16;
  EXPECT_NE(ModelFingerprint(w, other), *f256);
  other = l;
  other.numerics += "x";
  EXPECT_NE(ModelFingerprint(w, other), *f256);

  // Split over two ranks: the layout says so, and its blocks (every rank's
  // shard) never match the unsplit model's.
  CpuBackend r0(nullptr), r1(nullptr);
  Backend* const ranks[] = {&r0, &r1};
  auto split = Model::Load(dir, std::span<Backend* const>(ranks));
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  KvLayout ls2 = LayoutOf(**split, 256);
  EXPECT_EQ(ls2.tensor_parallel, 2);
  EXPECT_EQ(l.tensor_parallel, 1);
  EXPECT_NE(ModelFingerprint(w, ls2), *f256);
  ls2.tensor_parallel = 1;
  EXPECT_EQ(ModelFingerprint(w, ls2), *f256);  // unsplit keys are as before

  // The mistral fixture has sliding-window layers: they enter the layout.
  CpuBackend b2(nullptr);
  auto swa = Model::Load(testing::ModelsRoot() + "/mistral-tiny-swa", &b2);
  ASSERT_TRUE(swa.ok());
  KvLayout ls = LayoutOf(**swa, 256);
  EXPECT_TRUE(std::any_of(ls.windows.begin(), ls.windows.end(), [](int64_t x) { return x > 0; }));

  EXPECT_EQ(SampledWeightsIdentity(tmp.path() + "/missing.gguf").status().code(), StatusCode::kNotFound);
  fs::create_directory(tmp.path() + "/empty");
  EXPECT_EQ(SampledWeightsIdentity(tmp.path() + "/empty").status().code(), StatusCode::kInvalidArgument);
}

TEST(FingerprintTest, GgufFileIsItsOwnIdentity) {
  const std::string src = testing::ModelsRoot() + "/llama-tiny-gguf/llama-tiny-q4_0.gguf";
  if (!FileExists(src)) GTEST_SKIP() << src;
  TempDir tmp;
  const std::string dir = tmp.path() + "/m";
  fs::create_directory(dir);
  const std::string gguf = dir + "/llama-tiny-q4_0.gguf";
  fs::copy_file(src, gguf);
  auto file = SampledWeightsIdentity(gguf);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(*SampledWeightsIdentity(gguf), *file);
  // A folder that holds only that file (no config.json) is the same model.
  EXPECT_EQ(*SampledWeightsIdentity(dir), *file);
  // Another weight file beside it is another model.
  fs::copy_file(src, dir + "/second.gguf");
  EXPECT_NE(*SampledWeightsIdentity(dir), *file);
  EXPECT_EQ(*SampledWeightsIdentity(gguf), *file);
}

}  // namespace
}  // namespace llmhost::fingerprint_test
