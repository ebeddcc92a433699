// --device spellings, and what the CUDA backend promises beyond the ops
// (backend_ops_test holds those): memory counted to the byte, failures as
// Status (never an abort), sticky errors, reservations that commit and give
// back granules, and batch invariance of MatMul bit for bit. The CUDA cases
// skip where there is no GPU.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/device.h"
#include "quant_test_util.h"
#include "test_util.h"

namespace llmhost::device_test {
namespace {

using testing::EnvSwitch;

TEST(Device, ParsesEverySpelling) {
  auto cpu = ParseDevice("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->kind, DeviceKind::kCpu);
  auto c3 = ParseDevice("cuda:3");
  ASSERT_TRUE(c3.ok());
  EXPECT_EQ(c3->kind, DeviceKind::kCuda);
  EXPECT_EQ(c3->index, 3);
  EXPECT_EQ(c3->ToString(), "cuda:3");
  auto c = ParseDevice("cuda");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->index, 0);
  auto a = ParseDevice("auto");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kind, CudaDeviceCount() > 0 ? DeviceKind::kCuda : DeviceKind::kCpu);
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:1x", "CPU", ""}) {
    auto r = ParseDevice(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("cpu, cuda or cuda:N"), std::string::npos) << r.status().message();
  }
}

TEST(Device, MissingGpuIsAStatusThatSaysWhy) {
  DeviceSpec d;
  d.kind = DeviceKind::kCuda;
  d.index = CudaDeviceCount();  // one past the last GPU (or the first, where none)
  auto b = MakeBackend(d, Precision::kReference, nullptr);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kNotSupported);
  EXPECT_FALSE(b.status().message().empty());
}

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << (CudaBuilt() ? "no GPU here" : "built without CUDA");
    DeviceSpec d;
    d.kind = DeviceKind::kCuda;
    auto b = MakeBackend(d, Precision::kAuto, nullptr);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    b_ = std::move(*b);
  }
  std::unique_ptr<Backend> b_;
};

TEST_F(CudaTest, CountsEveryByteAndFreesIt) {
  const MemoryStats before = b_->memory_stats();
  auto buf = b_->Allocate(3 << 20, "test");
  ASSERT_TRUE(buf.ok()) << buf.status().ToString();
  EXPECT_EQ(b_->memory_stats().bytes_in_use, before.bytes_in_use + (3u << 20));
  EXPECT_EQ(b_->memory_stats().buffer_count, before.buffer_count + 1);
  std::vector<float> w(64 * 32, 0.5f);
  WeightMatrix host;
  host.format = WeightFormat::kF32;
  host.rows = 64;
  host.cols = 32;
  host.data = w.data();
  auto dw = b_->PrepareWeight(host);
  ASSERT_TRUE(dw.ok());
  EXPECT_EQ(b_->memory_stats().weight_bytes, before.weight_bytes + w.size() * 4);
  b_->ReleaseWeight(*dw);
  b_->Free(*buf);
  EXPECT_FALSE(buf->valid());
  EXPECT_EQ(b_->memory_stats().bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(b_->memory_stats().weight_bytes, before.weight_bytes);
}

TEST_F(CudaTest, AnAllocationTooLargeIsResourceExhaustedAndNotSticky) {
  auto huge = b_->Allocate(size_t{1} << 50, "a petabyte");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(huge.status().message().find("a petabyte"), std::string::npos) << huge.status().message();
  EXPECT_TRUE(b_->Synchronize().ok());  // the backend goes on working
  auto ok = b_->Allocate(1024, "small");
  ASSERT_TRUE(ok.ok());
  b_->Free(*ok);
}

TEST_F(CudaTest, ReservedMemoryCommitsAndDecommitsGranules) {
  const size_t g = b_->commit_granularity();
  ASSERT_GT(g, 0u);
  const uint64_t base = b_->memory_stats().bytes_in_use;
  auto r = b_->Reserve(64 * g, "kv");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(b_->memory_stats().bytes_in_use, base);  // address space only
  ASSERT_TRUE(b_->Commit(*r, 0, 4 * g).ok());
  EXPECT_EQ(b_->memory_stats().bytes_in_use, base + 4 * g);
  // Committed memory is usable: a round trip through it.
  std::vector<uint8_t> in(4 * g), out(4 * g);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7);
  b_->CopyToDevice(*r, 0, in.data(), in.size());
  b_->CopyToHost(out.data(), *r, 0, out.size());
  ASSERT_TRUE(b_->Synchronize().ok());
  EXPECT_EQ(in, out);
  ASSERT_TRUE(b_->Commit(*r, 2 * g, 4 * g).ok());  // overlaps: only new granules count
  EXPECT_EQ(b_->memory_stats().bytes_in_use, base + 6 * g);
  b_->Decommit(*r, 0, 2 * g);
  EXPECT_EQ(b_->memory_stats().bytes_in_use, base + 4 * g);
  b_->Free(*r);
  EXPECT_EQ(b_->memory_stats().bytes_in_use, base);
}

TEST_F(CudaTest, ACopyOutsideItsBufferIsStickyAtSynchronize) {
  auto buf = b_->Allocate(256, "small");
  ASSERT_TRUE(buf.ok());
  std::vector<uint8_t> host(512);
  b_->CopyToDevice(*buf, 0, host.data(), host.size());
  const Status s = b_->Synchronize();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("CopyToDevice"), std::string::npos) << s.message();
  EXPECT_FALSE(b_->Synchronize().ok());  // sticky
  b_->Free(*buf);
}

// MLX and the GGUF block types the kernels read stay packed on the device
// (a 4-bit matrix takes its file's bytes, not 4 a weight); the rest of GGUF
// is expanded to f32.
TEST_F(CudaTest, QuantizedWeightsStayPacked) {
  const int64_t rows = 64, cols = 512;
  struct Case {
    testing::FormatSpec spec;
    uint64_t max_bytes;
  };
  const Case cases[] = {
      {testing::Mlx(4, 64), rows * cols / 2 + 2 * rows * (cols / 64) * 2 + 3 * 256},
      {testing::Ggml(GgmlType::kQ4_K), rows * (cols / 256) * 144 + 256},
      {testing::Ggml(GgmlType::kQ8_0), rows * (cols / 32) * 34 + 256},
  };
  for (const Case& c : cases) {
    testing::OwnedWeight ow;
    testing::MakeRandomWeight(c.spec, rows, cols, 3, &ow);
    const uint64_t before = b_->memory_stats().weight_bytes;
    auto w = b_->PrepareWeight(ow.w);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_LE(b_->memory_stats().weight_bytes - before, c.max_bytes) << c.spec.Name();
    EXPECT_EQ(w->format, ow.w.format) << c.spec.Name();
    b_->ReleaseWeight(*w);
    EXPECT_EQ(b_->memory_stats().weight_bytes, before);
  }
}

// A random bf16 weight [rows, cols]: its stored bits, their f32 values, and
// the host matrix over the bits.
struct RandomBf16 {
  RandomBf16(int64_t rows, int64_t cols, std::mt19937& rng) : bits(rows * cols), values(rows * cols) {
    std::uniform_real_distribution<float> u(-1, 1);
    for (size_t i = 0; i < bits.size(); ++i) {
      const float f = u(rng);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      bits[i] = static_cast<uint16_t>(b >> 16);
      b = static_cast<uint32_t>(bits[i]) << 16;
      std::memcpy(&values[i], &b, 4);
    }
    host.format = WeightFormat::kBF16;
    host.rows = rows;
    host.cols = cols;
    host.data = bits.data();
  }
  std::vector<uint16_t> bits;
  std::vector<float> values;
  WeightMatrix host;
};

// A RandomBf16 weight on the device beside n_max rows of x (uniform in
// [-1, 1), drawn after the weight) and room for their products: Run(m, kind)
// multiplies the first m rows. Released with the case.
class Bf16MatMulCase {
 public:
  Bf16MatMulCase(Backend* b, int64_t rows, int64_t cols, int64_t n_max, std::mt19937& rng)
      : b_(b), rows_(rows), w_(rows, cols, rng), x_(n_max * cols) {
    std::uniform_real_distribution<float> u(-1, 1);
    for (float& v : x_) v = u(rng);
    auto dw = b->PrepareWeight(w_.host);
    auto dx = b->Allocate(x_.size() * 4, "x");
    auto dy = b->Allocate(n_max * rows * 4, "y");
    if (dw.ok()) dw_ = *dw, has_w_ = true;
    if (dx.ok()) dx_ = *dx;
    if (dy.ok()) dy_ = *dy;
    if (ok()) b->CopyToDevice(dx_, 0, x_.data(), x_.size() * 4);
  }
  ~Bf16MatMulCase() {
    if (has_w_) b_->ReleaseWeight(dw_);
    if (dx_.valid()) b_->Free(dx_);
    if (dy_.valid()) b_->Free(dy_);
  }
  Bf16MatMulCase(const Bf16MatMulCase&) = delete;
  Bf16MatMulCase& operator=(const Bf16MatMulCase&) = delete;

  bool ok() const { return has_w_ && dx_.valid() && dy_.valid(); }
  std::vector<float> Run(int64_t m, RowKind kind) {
    std::vector<float> y(m * rows_);
    b_->MatMul(dw_, dx_.as<float>(), m, dy_.as<float>(), kind);
    b_->CopyToHost(y.data(), dy_, 0, y.size() * 4);
    EXPECT_TRUE(b_->Synchronize().ok());
    return y;
  }

 private:
  Backend* b_;
  int64_t rows_;
  RandomBf16 w_;
  std::vector<float> x_;
  WeightMatrix dw_;
  bool has_w_ = false;
  DeviceBuffer dx_, dy_;
};

// A token's output row is the same bits alone and in any batch, for prompt
// rows (the tensor-core kernel at kAuto, tiles of 64 tokens x 128 rows) and
// generated rows (the f32 kernel) alike.
TEST_F(CudaTest, MatMulRowsAreBatchInvariantBitForBit) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t rows = 300, cols = 1000, n = 150;
  const RandomBf16 w(rows, cols, rng);
  auto dw = b_->PrepareWeight(w.host);
  ASSERT_TRUE(dw.ok());
  std::vector<float> x(n * cols);
  for (float& v : x) v = u(rng);
  auto dx = b_->Allocate(x.size() * 4, "x");
  auto dy = b_->Allocate(n * rows * 4, "y");
  ASSERT_TRUE(dx.ok() && dy.ok());
  b_->CopyToDevice(*dx, 0, x.data(), x.size() * 4);
  for (RowKind kind : {RowKind::kPrompt, RowKind::kGenerated}) {
    b_->MatMul(*dw, dx->as<float>(), n, dy->as<float>(), kind);
    std::vector<float> batch(n * rows), alone(rows);
    b_->CopyToHost(batch.data(), *dy, 0, batch.size() * 4);
    for (int64_t t : {int64_t{0}, int64_t{9}, int64_t{64}, n - 1}) {
      // Alone, and as the second row of a batch of 2 (another tile offset).
      for (int64_t first : {t, t > 0 ? t - 1 : t}) {
        const int64_t m = first == t ? 1 : 2;
        b_->MatMul(*dw, dx->as<float>() + first * cols, m, dy->as<float>(), kind);
        b_->CopyToHost(alone.data(), *dy, (t - first) * rows * 4, alone.size() * 4);
        ASSERT_TRUE(b_->Synchronize().ok());
        EXPECT_EQ(0, std::memcmp(alone.data(), batch.data() + t * rows, rows * 4))
            << "token " << t << " in a batch of " << m << (kind == RowKind::kPrompt ? " (prompt)" : " (generated)");
      }
    }
  }
  b_->ReleaseWeight(*dw);
  b_->Free(*dx);
  b_->Free(*dy);
}

// Generated rows of bf16 weights whose cols are a multiple of 64 go to the
// tensor cores at kAuto (x as hi + lo bf16 terms) and kFastBf16 (x rounded
// once): alone, in batches of every tile count, and fused with a second
// weight, a token's row is the same bits; and it stays near the f64 sum.
TEST_F(CudaTest, GeneratedRowsOnTensorCoresAreBatchInvariantAndClose) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t rows = 300, cols = 1024, n = 150;  // rows: a partial 16-row tile; n: several blocks of tokens
  const RandomBf16 w(rows, cols, rng);
  const std::vector<float>& wf = w.values;
  auto dw = b_->PrepareWeight(w.host);
  auto dw2 = b_->PrepareWeight(w.host);
  ASSERT_TRUE(dw.ok() && dw2.ok());
  std::vector<float> x(n * cols);
  for (float& v : x) v = u(rng);
  auto dx = b_->Allocate(x.size() * 4, "x");
  auto dy = b_->Allocate(n * rows * 4, "y");
  auto dy2 = b_->Allocate(n * rows * 4, "y2");
  ASSERT_TRUE(dx.ok() && dy.ok() && dy2.ok());
  b_->CopyToDevice(*dx, 0, x.data(), x.size() * 4);
  for (Precision p : {Precision::kAuto, Precision::kFastBf16}) {
    b_->set_precision(p);
    const char* name = PrecisionName(p);
    b_->MatMul(*dw, dx->as<float>(), n, dy->as<float>(), RowKind::kGenerated);
    std::vector<float> batch(n * rows), alone(rows);
    b_->CopyToHost(batch.data(), *dy, 0, batch.size() * 4);
    ASSERT_TRUE(b_->Synchronize().ok());
    // Near the exact sum: |err| within a bound scaled by sum |w x| (x's
    // rounding: 2^-9 relative for one bf16 term, ~2^-17 for two).
    const double rel = p == Precision::kAuto ? 1e-5 : 8e-3;
    for (int64_t t = 0; t < n; t += 7) {
      for (int64_t r = 0; r < rows; r += 5) {
        double exact = 0, mag = 0;
        for (int64_t k = 0; k < cols; ++k) {
          exact += static_cast<double>(wf[r * cols + k]) * x[t * cols + k];
          mag += std::abs(static_cast<double>(wf[r * cols + k]) * x[t * cols + k]);
        }
        ASSERT_NEAR(batch[t * rows + r], exact, rel * mag + 1e-6) << name << " token " << t << " row " << r;
      }
    }
    for (int64_t t : {int64_t{0}, int64_t{7}, int64_t{8}, int64_t{63}, int64_t{64}, n - 1}) {
      for (int64_t m : {int64_t{1}, int64_t{2}, int64_t{9}, int64_t{20}, int64_t{40}}) {
        const int64_t first = t - std::min<int64_t>(t, m / 2);
        if (first + m > n) continue;
        b_->MatMul(*dw, dx->as<float>() + first * cols, m, dy->as<float>(), RowKind::kGenerated);
        b_->CopyToHost(alone.data(), *dy, (t - first) * rows * 4, alone.size() * 4);
        ASSERT_TRUE(b_->Synchronize().ok());
        EXPECT_EQ(0, std::memcmp(alone.data(), batch.data() + t * rows, rows * 4))
            << name << ": token " << t << " at " << t - first << " of a batch of " << m;
      }
    }
    // Two weights in one launch: each y as MatMul's.
    const Backend::MatMulJob jobs[] = {{&*dw, dy->as<float>()}, {&*dw2, dy2->as<float>()}};
    b_->MatMuls(jobs, dx->as<float>(), 5, RowKind::kGenerated);
    std::vector<float> fused(5 * rows), fused2(5 * rows);
    b_->CopyToHost(fused.data(), *dy, 0, fused.size() * 4);
    b_->CopyToHost(fused2.data(), *dy2, 0, fused2.size() * 4);
    ASSERT_TRUE(b_->Synchronize().ok());
    EXPECT_EQ(0, std::memcmp(fused.data(), batch.data(), fused.size() * 4)) << name;
    EXPECT_EQ(0, std::memcmp(fused2.data(), batch.data(), fused2.size() * 4)) << name;
  }
  b_->ReleaseWeight(*dw);
  b_->ReleaseWeight(*dw2);
  b_->Free(*dx);
  b_->Free(*dy);
  b_->Free(*dy2);
}

// LLMHOST_CUDA_MMA_PIPELINE=on (a warp's next steps loaded while it sums
// the current ones) gives the same bits as the plain kernel, for every tile
// shape: rows enough for 4 row tiles a block at 32 tokens, and fewer tokens.
TEST_F(CudaTest, PipelinedTensorCoreRowsGiveTheSameBits) {
  std::mt19937 rng(12);
  const int64_t rows = 8200, cols = 512, n = 32;
  Bf16MatMulCase mm(b_.get(), rows, cols, n, rng);
  ASSERT_TRUE(mm.ok());
  auto run = [&](int64_t m) { return mm.Run(m, RowKind::kGenerated); };
  setenv("LLMHOST_CUDA_MMA_WIDE", "off", 1);  // past 8 tokens too: this kernel's tile shapes
  for (Precision p : {Precision::kAuto, Precision::kFastBf16}) {
    b_->set_precision(p);
    for (int64_t m : {int64_t{1}, int64_t{9}, int64_t{20}, n}) {
      unsetenv("LLMHOST_CUDA_MMA_PIPELINE");
      const std::vector<float> plain = run(m);
      setenv("LLMHOST_CUDA_MMA_PIPELINE", "on", 1);
      const std::vector<float> piped = run(m);
      unsetenv("LLMHOST_CUDA_MMA_PIPELINE");
      EXPECT_EQ(0, std::memcmp(plain.data(), piped.data(), plain.size() * 4)) << PrecisionName(p) << " n " << m;
    }
  }
  unsetenv("LLMHOST_CUDA_MMA_WIDE");
  b_->set_precision(Precision::kAuto);
}

void SetOrUnset(const char* name, const char* value) { *value ? setenv(name, value, 1) : unsetenv(name); }

// Unsets the named switches when the test leaves, an assertion's early return included.
struct ScopedUnset {
  explicit ScopedUnset(std::initializer_list<const char*> names) : names(names) {}
  ~ScopedUnset() {
    for (const char* n : names) unsetenv(n);
  }
  std::vector<const char*> names;
};

// A random bf16 weight (twice: two weights of one launch) and n random tokens
// on the device, for the tensor-core kernels' bit tests.
class RowsCase {
 public:
  struct Shape {
    int64_t rows, cols, n;
  };
  RowsCase(Backend* b, const Shape& sh, std::mt19937& rng) : b_(b), sh_(sh), w_(sh.rows, sh.cols, rng) {
    std::uniform_real_distribution<float> u(-1, 1);
    auto dw = b_->PrepareWeight(w_.host);
    auto dw2 = b_->PrepareWeight(w_.host);
    std::vector<float> x(sh.n * sh.cols);
    for (float& v : x) v = u(rng);
    auto dx = b_->Allocate(x.size() * 4, "x");
    auto dy = b_->Allocate(sh.n * sh.rows * 4, "y");
    auto dy2 = b_->Allocate(sh.n * sh.rows * 4, "y2");
    if (!dw.ok() || !dw2.ok() || !dx.ok() || !dy.ok() || !dy2.ok()) return;
    dw_ = std::move(*dw);
    dw2_ = std::move(*dw2);
    dx_ = *dx;
    dy_ = *dy;
    dy2_ = *dy2;
    b_->CopyToDevice(dx_, 0, x.data(), x.size() * 4);
    ok_ = true;
  }
  ~RowsCase() {
    if (!ok_) return;
    b_->ReleaseWeight(dw_);
    b_->ReleaseWeight(dw2_);
    b_->Free(dx_);
    b_->Free(dy_);
    b_->Free(dy2_);
  }
  bool ok() const { return ok_; }
  std::string Name() const {
    return "weight " + std::to_string(sh_.rows) + " x " + std::to_string(sh_.cols) + " n " + std::to_string(sh_.n);
  }
  // The generated rows of tokens [first, first + m).
  std::vector<float> Run(int64_t first, int64_t m) {
    std::vector<float> y(m * sh_.rows);
    b_->MatMul(dw_, dx_.as<float>() + first * sh_.cols, m, dy_.as<float>(), RowKind::kGenerated);
    b_->CopyToHost(y.data(), dy_, 0, y.size() * 4);
    EXPECT_TRUE(b_->Synchronize().ok());
    return y;
  }
  // `batch` (all n tokens) against tokens alone and against both weights in one launch, bit for bit.
  void ExpectAloneAndFusedMatch(const std::vector<float>& batch, const std::string& at) {
    for (int64_t t : {int64_t{0}, int64_t{5}, sh_.n / 2, sh_.n - 1}) {
      if (t >= sh_.n) continue;
      const std::vector<float> alone = Run(t, 1);
      EXPECT_EQ(0, std::memcmp(alone.data(), batch.data() + t * sh_.rows, sh_.rows * 4)) << at << " token " << t;
    }
    const Backend::MatMulJob jobs[] = {{&dw_, dy_.as<float>()}, {&dw2_, dy2_.as<float>()}};
    b_->MatMuls(jobs, dx_.as<float>(), sh_.n, RowKind::kGenerated);
    std::vector<float> fused(sh_.n * sh_.rows), fused2(sh_.n * sh_.rows);
    b_->CopyToHost(fused.data(), dy_, 0, fused.size() * 4);
    b_->CopyToHost(fused2.data(), dy2_, 0, fused2.size() * 4);
    ASSERT_TRUE(b_->Synchronize().ok());
    EXPECT_EQ(0, std::memcmp(fused.data(), batch.data(), batch.size() * 4)) << at << " (fused)";
    EXPECT_EQ(0, std::memcmp(fused2.data(), batch.data(), batch.size() * 4)) << at << " (fused)";
  }

 private:
  Backend* b_;
  Shape sh_;
  RandomBf16 w_;
  WeightMatrix dw_, dw2_;
  DeviceBuffer dx_, dy_, dy2_;
  bool ok_ = false;
};

// Past 8 tokens the wide kernel (a warp a row tile, walking the parts of
// the columns in turn) takes bf16 rows: the same bits as the kernel for few
// tokens, alone and at the same batch (LLMHOST_CUDA_MMA_WIDE=off), over its
// shapes (the parts in one block, or dealt over clusters of 2, 4 and 8
// blocks; 2 and 4 token tiles; weights through a cp.async ring of 4 or 3
// steps or in registers; one or two row tiles a warp), steps that do not divide into the 8 parts, partial row and
// token tiles, and two weights in one launch. Before Hopper both runs take
// the first kernel (no clusters).
TEST_F(CudaTest, WideTensorCoreRowsGiveTheSameBitsAsFewTokens) {
  const RowsCase::Shape shapes[] = {{8200, 512, 128}, {4100, 832, 128}, {8200, 512, 32},
                                    {2056, 576, 40},  {300, 1024, 17},  {1000, 512, 9}};
  std::mt19937 rng(13);
  ScopedUnset unset({"LLMHOST_CUDA_MMA_GEMM", "LLMHOST_CUDA_MMA_WIDE", "LLMHOST_CUDA_WIDE_ASYNC", "LLMHOST_CUDA_WIDE_RING",
                     "LLMHOST_CUDA_WIDE_ROW_TILES", "LLMHOST_CUDA_WGMMA"});
  setenv("LLMHOST_CUDA_MMA_GEMM", "off", 1);  // 128 tokens would take a GEMM (their own tests)
  setenv("LLMHOST_CUDA_WGMMA", "off", 1);
  for (const RowsCase::Shape& sh : shapes) {
    RowsCase rc(b_.get(), sh, rng);
    ASSERT_TRUE(rc.ok());
    // Weights through the cp.async ring (clusters of 1 or 8 blocks; 4 or 3
    // steps; 1 or 2 row tiles a warp), then in registers
    // (LLMHOST_CUDA_WIDE_ASYNC=off: clusters of 1, 2 or 4).
    // "" leaves a setting to the kernel's choice (two row tiles from 97 tokens).
    struct Setting {
      const char *async, *ring, *row_tiles;
    };
    const Setting settings[] = {{"on", "", ""},   {"on", "4", "1"}, {"on", "3", "1"},
                                {"on", "4", "2"}, {"on", "3", "2"}, {"off", "", ""}};
    for (const Setting& st : settings)
    for (Precision p : {Precision::kAuto, Precision::kFastBf16}) {
      SetOrUnset("LLMHOST_CUDA_WIDE_ASYNC", st.async);
      SetOrUnset("LLMHOST_CUDA_WIDE_RING", st.ring);
      SetOrUnset("LLMHOST_CUDA_WIDE_ROW_TILES", st.row_tiles);
      b_->set_precision(p);
      const std::string at = std::string(PrecisionName(p)) + " async " + st.async + " ring '" + st.ring +
                             "' row tiles '" + st.row_tiles + "' " + rc.Name();
      const std::vector<float> wide = rc.Run(0, sh.n);
      setenv("LLMHOST_CUDA_MMA_WIDE", "off", 1);
      const std::vector<float> tiles = rc.Run(0, sh.n);
      unsetenv("LLMHOST_CUDA_MMA_WIDE");
      EXPECT_EQ(0, std::memcmp(wide.data(), tiles.data(), wide.size() * 4)) << at;
      rc.ExpectAloneAndFusedMatch(wide, at);
    }
  }
  b_->set_precision(Precision::kAuto);
}

// Whether a whole walk takes a launch by itself (no tile forced): 128 x 128
// tiles where they make 128 blocks, else the wide kernel. Only the GEMM
// takes scratch for x's terms, so a fresh backend's bytes tell which ran.
TEST_F(CudaTest, GemmTakesOnlyLaunchesOfEnoughTiles) {
  ScopedUnset unset({"LLMHOST_CUDA_GEMM_FROM", "LLMHOST_CUDA_MMA_GEMM", "LLMHOST_CUDA_GEMM_PARTS", "LLMHOST_CUDA_GEMM_TILE",
                     "LLMHOST_CUDA_WGMMA"});
  setenv("LLMHOST_CUDA_MMA_GEMM", "on", 1);
  setenv("LLMHOST_CUDA_WGMMA", "off", 1);
  std::mt19937 rng(19);
  // 16,400 rows at 128 tokens: 129 blocks; 8,200: 65.
  for (const RowsCase::Shape& sh : {RowsCase::Shape{16400, 512, 128}, RowsCase::Shape{8200, 512, 128}}) {
    DeviceSpec d;
    d.kind = DeviceKind::kCuda;
    auto fresh = MakeBackend(d, Precision::kAuto, nullptr);
    ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
    RowsCase rc(fresh->get(), sh, rng);
    ASSERT_TRUE(rc.ok());
    const uint64_t before = (*fresh)->memory_stats().bytes_in_use;
    const std::vector<float> y = rc.Run(0, sh.n);
    const uint64_t grew = (*fresh)->memory_stats().bytes_in_use - before;
    if (sh.rows == 16400) {
      EXPECT_GE(grew, static_cast<uint64_t>(sh.n * sh.cols * 4)) << "the GEMM did not take " << rc.Name();
    } else {
      EXPECT_LT(grew, static_cast<uint64_t>(sh.n * sh.cols * 4)) << "the GEMM took " << rc.Name();
    }
    rc.ExpectAloneAndFusedMatch(y, rc.Name());
  }
}

// The GEMM-shaped kernel of a large batch (matmul_mma_gemm.cu) gives every
// token the bits of the wide kernel and of the token alone, both ways of
// walking the parts: a block walking all of them (tiles of 128 x 128, 128 x
// 64 and 64 x 64, chosen or forced; rings of 3 and 4 stages; parts of
// unequal steps) and a cluster of 8 blocks one part each (tiles of 128 and
// 256 rows, rings of 2-4 stages); rows and tokens that do not fill a tile,
// parts of one and two steps, two token tiles, two weights a launch.
TEST_F(CudaTest, GemmTensorCoreRowsGiveTheSameBitsAsFewTokens) {
  // 16,400 rows at 128 tokens: 129 blocks of 128 x 128, where a whole walk
  // takes the launch by itself; the other shapes only with a tile forced.
  const RowsCase::Shape shapes[] = {{8200, 512, 128}, {16400, 512, 128}, {4100, 832, 200},
                                    {300, 1024, 97},  {2056, 576, 130},  {136, 4096, 40}};
  std::mt19937 rng(17);
  ScopedUnset unset({"LLMHOST_CUDA_GEMM_FROM", "LLMHOST_CUDA_MMA_GEMM", "LLMHOST_CUDA_GEMM_ROWS", "LLMHOST_CUDA_GEMM_STAGES",
                     "LLMHOST_CUDA_GEMM_PARTS", "LLMHOST_CUDA_GEMM_TILE", "LLMHOST_CUDA_WGMMA"});
  setenv("LLMHOST_CUDA_GEMM_FROM", "9", 1);  // the last shape's 40 tokens too
  setenv("LLMHOST_CUDA_WGMMA", "off", 1);
  setenv("LLMHOST_CUDA_MMA_GEMM", "on", 1);
  bool first = true;
  for (const RowsCase::Shape& sh : shapes) {
    RowsCase rc(b_.get(), sh, rng);
    ASSERT_TRUE(rc.ok());
    struct Setting {
      const char *parts, *tile, *rows, *stages;
    };
    // The first forces a tile, so that the check that the GEMM ran holds.
    const Setting settings[] = {{"", "128x128", "", ""},   {"", "", "", ""},               {"", "128x128", "", "4"},
                                {"", "128x64", "", ""},    {"", "64x64", "", "4"},         {"cluster", "", "", ""},
                                {"cluster", "", "128", "2"}, {"cluster", "", "128", "4"}, {"cluster", "", "256", "2"},
                                {"cluster", "", "256", "3"}};
    for (const Setting& st : settings)
    for (Precision p : {Precision::kAuto, Precision::kFastBf16}) {
      SetOrUnset("LLMHOST_CUDA_GEMM_PARTS", st.parts);
      SetOrUnset("LLMHOST_CUDA_GEMM_TILE", st.tile);
      SetOrUnset("LLMHOST_CUDA_GEMM_ROWS", st.rows);
      SetOrUnset("LLMHOST_CUDA_GEMM_STAGES", st.stages);
      b_->set_precision(p);
      const std::string at = std::string(PrecisionName(p)) + " parts '" + st.parts + "' tile '" + st.tile + "' rows '" +
                             st.rows + "' stages '" + st.stages + "' " + rc.Name();
      const uint64_t before = b_->memory_stats().bytes_in_use;
      const std::vector<float> gemm = rc.Run(0, sh.n);
      if (first) {  // only the GEMM takes scratch for x's terms: it ran
        EXPECT_GE(b_->memory_stats().bytes_in_use, before + sh.n * sh.cols * 4) << "the GEMM did not run";
        first = false;
      }
      setenv("LLMHOST_CUDA_MMA_GEMM", "off", 1);
      const std::vector<float> wide = rc.Run(0, sh.n);
      setenv("LLMHOST_CUDA_MMA_GEMM", "on", 1);
      EXPECT_EQ(0, std::memcmp(gemm.data(), wide.data(), gemm.size() * 4)) << at;
      rc.ExpectAloneAndFusedMatch(gemm, at);
    }
  }
  b_->set_precision(Precision::kAuto);
}

// The GEMM on Hopper's warpgroup MMA (matmul_wgmma.cu) gives every token the
// bits of the wide kernel (up to 8 tokens: the few-token kernel) and of the
// token alone: each tile (128 or 64 rows by 128, 64, 32, 16 or 8 tokens)
// forced and chosen, x multicast over clusters of 1-8
// blocks (blocks without rows among them), a lone warpgroup's MMAs
// overlapping the next step's loads or not, rings of 2-8 stages, a tile's parts
// shared by clusters of 2-8 blocks (the tile chosen with them too), 2 or 4
// parts walked side by side; rows and tokens that do not fill
// a tile, parts of unequal steps (13 and 224 steps), two weights a launch,
// both precisions. It runs on compute capability 9.0 alone (sm_90a):
// elsewhere the launches fall back and the comparisons still hold.
TEST_F(CudaTest, WgmmaRowsGiveTheSameBitsAsFewTokens) {
  const RowsCase::Shape shapes[] = {{8200, 512, 128}, {4100, 832, 200}, {300, 1024, 97}, {2056, 576, 130},
                                    {136, 4096, 40},  {200, 14336, 24}, {1000, 1024, 1}, {520, 576, 5},
                                    {2056, 512, 8},   {300, 832, 13}};
  std::mt19937 rng(23);
  ScopedUnset unset({"LLMHOST_CUDA_WGMMA", "LLMHOST_CUDA_WGMMA_FROM", "LLMHOST_CUDA_WGMMA_TILE",
                     "LLMHOST_CUDA_WGMMA_CLUSTER", "LLMHOST_CUDA_WGMMA_OVERLAP", "LLMHOST_CUDA_WGMMA_STAGES",
                     "LLMHOST_CUDA_WGMMA_PARTS", "LLMHOST_CUDA_WGMMA_CONCURRENT", "LLMHOST_CUDA_MMA_GEMM"});
  setenv("LLMHOST_CUDA_WGMMA_FROM", "1", 1);
  setenv("LLMHOST_CUDA_MMA_GEMM", "off", 1);
  const std::vector<CudaMemory> gpus = CudaMemoryInfo();
  const bool hopper = !gpus.empty() && (gpus[0].name.find("H100") != std::string::npos ||
                                        gpus[0].name.find("H200") != std::string::npos);
  struct Setting {
    const char *tile, *cluster, *overlap, *stages, *parts, *conc = "";  // "": the kernel's choice
  };
  const Setting settings[] = {
      {"128x128", "4", "", "", ""},   {"", "", "", "", ""},          {"128x64", "2", "", "6", ""},
      {"64x128", "1", "", "2", ""},   {"64x64", "8", "", "8", ""},   {"64x64", "4", "off", "3", ""},
      {"64x128", "2", "off", "", ""}, {"128x32", "4", "", "5", ""},  {"64x32", "2", "", "8", ""},
      {"", "", "", "8", ""},          {"64x64", "", "", "", "8"},    {"128x128", "", "", "", "4"},
      {"64x32", "", "", "", "2"},     {"128x64", "2", "off", "", "8"}, {"", "", "", "", "auto"},
      {"128x16", "", "", "", ""},     {"64x8", "", "", "", "4"},     {"128x8", "2", "", "3", ""},
      {"64x16", "", "off", "", "8"},  {"", "", "", "", "big"},      {"", "", "", "3", "big2"},
      {"64x64", "", "", "", "", "4"}, {"64x32", "", "off", "", "", "4"}, {"128x64", "", "", "", "", "2"},
      {"", "", "", "", "", "1"},      {"64x64", "", "off", "", "", "1"}, {"128x64", "2", "", "", "", "1"},      {"64x128", "", "", "3", "", "2"}, {"128x32", "2", "", "", "", "4"},
      {"64x64", "", "", "", "4", "4"}};
  bool first = true;
  for (const RowsCase::Shape& sh : shapes) {
    RowsCase rc(b_.get(), sh, rng);
    ASSERT_TRUE(rc.ok());
    for (const Setting& st : settings)
    for (Precision p : {Precision::kAuto, Precision::kFastBf16}) {
      SetOrUnset("LLMHOST_CUDA_WGMMA_TILE", st.tile);
      SetOrUnset("LLMHOST_CUDA_WGMMA_CLUSTER", st.cluster);
      SetOrUnset("LLMHOST_CUDA_WGMMA_OVERLAP", st.overlap);
      SetOrUnset("LLMHOST_CUDA_WGMMA_STAGES", st.stages);
      SetOrUnset("LLMHOST_CUDA_WGMMA_PARTS", st.parts);
      SetOrUnset("LLMHOST_CUDA_WGMMA_CONCURRENT", st.conc);
      b_->set_precision(p);
      const std::string at = std::string(PrecisionName(p)) + " tile '" + st.tile + "' cluster '" + st.cluster +
                             "' overlap '" + st.overlap + "' stages '" + st.stages + "' parts '" + st.parts + "' concurrent '" + st.conc + "' " +
                             rc.Name();
      setenv("LLMHOST_CUDA_WGMMA", "on", 1);
      const uint64_t before = b_->memory_stats().bytes_in_use;
      const std::vector<float> gemm = rc.Run(0, sh.n);
      if (first && hopper) {  // only a GEMM takes scratch for x's terms: it ran
        EXPECT_GE(b_->memory_stats().bytes_in_use, before + sh.n * sh.cols * 4) << "the wgmma GEMM did not run";
      }
      first = false;
      setenv("LLMHOST_CUDA_WGMMA", "off", 1);
      const std::vector<float> wide = rc.Run(0, sh.n);
      setenv("LLMHOST_CUDA_WGMMA", "on", 1);
      EXPECT_EQ(0, std::memcmp(gemm.data(), wide.data(), gemm.size() * 4)) << at;
      rc.ExpectAloneAndFusedMatch(gemm, at);
    }
  }
  b_->set_precision(Precision::kAuto);
}

// A step's logits come back into page-locked memory (the copy engine writes
// it directly), the values as copied; with LLMHOST_CUDA_PINNED_RESULTS=off
// into the heap.
TEST_F(CudaTest, ResultsComeBackIntoPageLockedMemory) {
  std::vector<float> host(1 << 20);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 977) - 400.0f;
  auto d = b_->Allocate(host.size() * 4, "results");
  ASSERT_TRUE(d.ok());
  b_->CopyToDevice(*d, 0, host.data(), host.size() * 4);
  for (const char* pinned : {"", "on", "off"}) {  // "": the default
    *pinned ? setenv("LLMHOST_CUDA_PINNED_RESULTS", pinned, 1) : unsetenv("LLMHOST_CUDA_PINNED_RESULTS");
    HostFloats out;
    out.set_allocator(b_->ResultAllocator());
    out.resize(host.size());
    EXPECT_EQ(out.from_allocator(), std::string(pinned) != "off") << pinned;
    b_->CopyToHost(out.data(), *d, 0, host.size() * 4);
    ASSERT_TRUE(b_->Synchronize().ok());
    EXPECT_EQ(0, std::memcmp(out.data(), host.data(), host.size() * 4)) << pinned;
  }
  unsetenv("LLMHOST_CUDA_PINNED_RESULTS");
  b_->Free(*d);
}

// Whether the backend finds cuBLASLt where it looks (cuda/lt_gemm.cpp): the
// tests of its paths skip without it (nothing would take them).
bool CublasLtLoadable() {
  if (std::getenv("LLMHOST_CUBLASLT") != nullptr) return false;  // chosen by the environment: not these tests'
  for (const char* name : {"libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.13"}) {
    if (void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      dlclose(lib);
      return true;
    }
  }
  return false;
}

// LLMHOST_CUDA_BATCH_INVARIANT=off sends generated rows of bf16 weights past
// 8 tokens to cuBLASLt (x's two terms stacked as one GEMM at kAuto): sums
// within the precision's rounding of the exact ones, in other bits than the
// batch-invariant kernel's (so the switch took effect); the fused launch
// gives each weight the same bits as alone; 8 tokens and fewer keep the
// batch-invariant kernel. Skipped without cuBLASLt (nothing would change).
TEST_F(CudaTest, GeneratedRowsWithoutBatchInvarianceTakeCublasLt) {
  if (!CublasLtLoadable()) GTEST_SKIP() << "no cuBLASLt (or one named by LLMHOST_CUBLASLT)";
  std::mt19937 rng(14);
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t rows = 1000, cols = 768, n_max = 100;
  const RandomBf16 w(rows, cols, rng);
  auto dw = b_->PrepareWeight(w.host);
  auto dw2 = b_->PrepareWeight(w.host);
  ASSERT_TRUE(dw.ok() && dw2.ok());
  std::vector<float> x(n_max * cols);
  for (float& v : x) v = u(rng);
  auto dx = b_->Allocate(x.size() * 4, "x");
  auto dy = b_->Allocate(n_max * rows * 4, "y");
  auto dy2 = b_->Allocate(n_max * rows * 4, "y2");
  ASSERT_TRUE(dx.ok() && dy.ok() && dy2.ok());
  b_->CopyToDevice(*dx, 0, x.data(), x.size() * 4);
  auto run = [&](int64_t m) {
    std::vector<float> y(m * rows);
    b_->MatMul(*dw, dx->as<float>(), m, dy->as<float>(), RowKind::kGenerated);
    b_->CopyToHost(y.data(), *dy, 0, y.size() * 4);
    EXPECT_TRUE(b_->Synchronize().ok());
    return y;
  };
  for (Precision p : {Precision::kAuto, Precision::kFastBf16}) {
    b_->set_precision(p);
    // x rounded once to bf16 (2^-9) at fast-bf16; two terms (~2^-17) at auto, plus f32 sums.
    const double tol = p == Precision::kAuto ? 1e-4 : 5e-3;
    for (int64_t m : {int64_t{8}, int64_t{9}, int64_t{32}, n_max}) {
      const std::string at = std::string(PrecisionName(p)) + " n " + std::to_string(m);
      const std::vector<float> invariant = run(m);
      std::vector<float> any, fused(m * rows), fused2(m * rows);
      {
        const EnvSwitch off("LLMHOST_CUDA_BATCH_INVARIANT", "off");
        any = run(m);
        const Backend::MatMulJob jobs[] = {{&*dw, dy->as<float>()}, {&*dw2, dy2->as<float>()}};
        b_->MatMuls(jobs, dx->as<float>(), m, RowKind::kGenerated);
        b_->CopyToHost(fused.data(), *dy, 0, fused.size() * 4);
        b_->CopyToHost(fused2.data(), *dy2, 0, fused2.size() * 4);
        ASSERT_TRUE(b_->Synchronize().ok()) << at;
      }
      const bool same_as_invariant = std::memcmp(any.data(), invariant.data(), any.size() * 4) == 0;
      if (m <= 8) {
        EXPECT_TRUE(same_as_invariant) << at;
      } else {
        EXPECT_FALSE(same_as_invariant) << at << ": the rows did not reach cuBLASLt";
      }
      EXPECT_EQ(0, std::memcmp(fused.data(), any.data(), any.size() * 4)) << at << " (fused)";
      EXPECT_EQ(0, std::memcmp(fused2.data(), any.data(), any.size() * 4)) << at << " (fused)";
      int bad = 0;
      for (int64_t t = 0; t < m; ++t) {
        for (int64_t r = 0; r < rows; ++r) {
          double exact = 0, mag = 0;
          for (int64_t k = 0; k < cols; ++k) {
            const double prod = static_cast<double>(w.values[r * cols + k]) * x[t * cols + k];
            exact += prod;
            mag += std::fabs(prod);
          }
          if (std::fabs(any[t * rows + r] - exact) > tol * mag && bad++ < 5) {
            ADD_FAILURE() << at << " token " << t << " row " << r << ": " << any[t * rows + r] << " vs " << exact;
          }
        }
      }
    }
  }
  b_->set_precision(Precision::kAuto);
  b_->ReleaseWeight(*dw);
  b_->ReleaseWeight(*dw2);
  b_->Free(*dx);
  b_->Free(*dy);
  b_->Free(*dy2);
}

// Prompt rows' two bf16 terms (kAuto with LLMHOST_CUDA_PROMPT_SPLIT=on) go as one cuBLASLt GEMM of 2n rows,
// the halves then added (unless LLMHOST_CUDA_STACK_TERMS=off): the same bits
// as two GEMMs, the second onto the first, at every count of rows.
TEST_F(CudaTest, StackedTermsGiveTheSameBitsAsTwoGemms) {
  if (!CublasLtLoadable()) GTEST_SKIP() << "no cuBLASLt (or one named by LLMHOST_CUBLASLT)";
  std::mt19937 rng(15);
  b_->set_precision(Precision::kAuto);
  const EnvSwitch split("LLMHOST_CUDA_PROMPT_SPLIT", "on");
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{1000, 768}, {4096, 512}}) {
    const int64_t n_max = 600;
    Bf16MatMulCase mm(b_.get(), rows, cols, n_max, rng);
    ASSERT_TRUE(mm.ok());
    for (int64_t m : {int64_t{1}, int64_t{7}, int64_t{64}, int64_t{300}, n_max}) {
      const std::vector<float> stacked = mm.Run(m, RowKind::kPrompt);  // the default
      std::vector<float> two;
      {
        const EnvSwitch off("LLMHOST_CUDA_STACK_TERMS", "off");
        two = mm.Run(m, RowKind::kPrompt);
      }
      EXPECT_EQ(0, std::memcmp(two.data(), stacked.data(), two.size() * 4)) << rows << " x " << cols << " n " << m;
    }
  }
}

// Prompt rows of weights that share x (q/k/v, gate/up) in one MatMuls: x
// rounded to bf16 once for the bf16 weights, each y with the bits of its own
// MatMul, at either precision that rounds prompt rows and with the split
// terms; an f16 weight among them sends every one down its own path.
TEST_F(CudaTest, PromptRowsSharingXGiveEachMatMulsBits) {
  std::mt19937 rng(16);
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t cols = 512, n = 70, row_counts[] = {256, 64, 64};
  std::vector<RandomBf16> ws;
  ws.reserve(std::size(row_counts));  // each host matrix points into its own bits
  std::vector<DeviceBuffer> dys;
  std::vector<WeightMatrix> dws;
  for (int64_t rows : row_counts) {
    ws.emplace_back(rows, cols, rng);
    auto dw = b_->PrepareWeight(ws.back().host);
    auto dy = b_->Allocate(n * rows * 4, "y");
    ASSERT_TRUE(dw.ok() && dy.ok());
    dws.push_back(*dw);
    dys.push_back(*dy);
  }
  std::vector<float> x(n * cols);
  for (float& v : x) v = u(rng);
  testing::OwnedWeight f16;
  testing::MakeRandomWeight(testing::Plain(WeightFormat::kF16), 64, cols, 17, &f16);
  auto df16 = b_->PrepareWeight(f16.w);
  ASSERT_TRUE(df16.ok());
  auto dx = b_->Allocate(x.size() * 4, "x");
  ASSERT_TRUE(dx.ok());
  b_->CopyToDevice(*dx, 0, x.data(), x.size() * 4);
  auto get = [&](const DeviceBuffer& y, int64_t rows) {
    std::vector<float> h(n * rows);
    b_->CopyToHost(h.data(), y, 0, h.size() * 4);
    EXPECT_TRUE(b_->Synchronize().ok());
    return h;
  };
  std::vector<std::vector<float>> alone_auto[2];  // kAuto's prompt rows: one term, two terms
  bool side_made = false;
  for (const char* split : {"off", "on"}) {
    const EnvSwitch terms("LLMHOST_CUDA_PROMPT_SPLIT", split);
    for (Precision p : {Precision::kAuto, Precision::kFastBf16}) {
      b_->set_precision(p);
      const std::string at = std::string(PrecisionName(p)) + " split " + split;
      std::vector<std::vector<float>> alone;
      for (size_t i = 0; i < dws.size(); ++i) {
        b_->MatMul(dws[i], dx->as<float>(), n, dys[i].as<float>(), RowKind::kPrompt);
        alone.push_back(get(dys[i], row_counts[i]));
      }
      const std::vector<float> stale(n * row_counts[0], 7.0f);  // nothing left from the runs alone
      // kAuto rounds x to one bf16 term as kFastBf16 does, unless split.
      if (p == Precision::kAuto) {
        alone_auto[split[1] == 'n'] = alone;
        if (split[1] == 'f') {
          b_->set_precision(Precision::kFastBf16);
          b_->MatMul(dws[0], dx->as<float>(), n, dys[0].as<float>(), RowKind::kPrompt);
          const std::vector<float> fast = get(dys[0], row_counts[0]);
          EXPECT_EQ(0, std::memcmp(fast.data(), alone[0].data(), fast.size() * 4)) << "auto as fast-bf16";
          b_->set_precision(p);
        }
      }
      // One stream, and the weights after the first on a side stream (LLMHOST_CUDA_PROMPT_STREAMS).
      for (const char* streams : {"off", "on"}) {
        const EnvSwitch side("LLMHOST_CUDA_PROMPT_STREAMS", streams);
        for (size_t i = 0; i < dys.size(); ++i) b_->CopyToDevice(dys[i], 0, stale.data(), n * row_counts[i] * 4);
        const Backend::MatMulJob jobs[] = {
            {&dws[0], dys[0].as<float>()}, {&dws[1], dys[1].as<float>()}, {&dws[2], dys[2].as<float>()}};
        const uint64_t held = b_->memory_stats().bytes_in_use;
        b_->MatMuls(jobs, dx->as<float>(), n, RowKind::kPrompt);
        // The side stream's cuBLASLt workspace, made on its first use (the one-term path only takes it).
        if (streams[1] == 'n' && !side_made && split[1] == 'f') {
          EXPECT_EQ(b_->memory_stats().bytes_in_use, held + 256) << at << ": the side stream's workspace";
          side_made = true;
        }
        for (size_t i = 0; i < dws.size(); ++i) {
          EXPECT_EQ(0, std::memcmp(get(dys[i], row_counts[i]).data(), alone[i].data(), alone[i].size() * 4))
              << at << " streams " << streams << " weight " << i;
        }
      }
      // With an f16 weight beside them: each its own path, the same bits.
      b_->MatMul(*df16, dx->as<float>(), n, dys[2].as<float>(), RowKind::kPrompt);
      const std::vector<float> f16_alone = get(dys[2], 64);
      for (size_t i : {size_t{0}, size_t{2}}) b_->CopyToDevice(dys[i], 0, stale.data(), n * row_counts[i] * 4);
      const Backend::MatMulJob mixed[] = {{&dws[0], dys[0].as<float>()}, {&*df16, dys[2].as<float>()}};
      b_->MatMuls(mixed, dx->as<float>(), n, RowKind::kPrompt);
      EXPECT_EQ(0, std::memcmp(get(dys[0], row_counts[0]).data(), alone[0].data(), alone[0].size() * 4)) << at;
      EXPECT_EQ(0, std::memcmp(get(dys[2], 64).data(), f16_alone.data(), f16_alone.size() * 4)) << at;
    }
  }
  EXPECT_NE(0, std::memcmp(alone_auto[0][0].data(), alone_auto[1][0].data(), alone_auto[0][0].size() * 4))
      << "LLMHOST_CUDA_PROMPT_SPLIT=on: other bits";
  EXPECT_TRUE(side_made);
  b_->set_precision(Precision::kAuto);
  for (size_t i = 0; i < dws.size(); ++i) {
    b_->ReleaseWeight(dws[i]);
    b_->Free(dys[i]);
  }
  b_->ReleaseWeight(*df16);
  b_->Free(*dx);
}

// Prompt plans by chunk size (the default; LLMHOST_CUBLASLT_PLANS=one turns
// them off): prompt chunks of 129-1,024 rows may take a
// plan chosen for their size, only where it gives the bits of the weight
// shape's one plan (compared on each bucket's first chunk): every row the
// same bits as without the switch, whatever its chunk.
TEST_F(CudaTest, PromptPlansByChunkGiveTheOnePlansBits) {
  if (!CublasLtLoadable()) GTEST_SKIP() << "no cuBLASLt (or one named by LLMHOST_CUBLASLT)";
  std::mt19937 rng(18);
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{4096, 4096}, {1024, 4096}, {1000, 768}}) {
    const int64_t n_max = 1000;
    Bf16MatMulCase mm(b_.get(), rows, cols, n_max, rng);
    ASSERT_TRUE(mm.ok());
    std::vector<float> one;
    {
      const EnvSwitch off("LLMHOST_CUBLASLT_PLANS", "one");
      one = mm.Run(n_max, RowKind::kPrompt);  // the one plan
    }
    for (int64_t m : {int64_t{1000}, int64_t{1000}, int64_t{700}, int64_t{300}, int64_t{200}, int64_t{129}}) {
      // A bucket's first chunk is compared; later ones take what the comparison chose.
      const std::vector<float> got = mm.Run(m, RowKind::kPrompt);
      EXPECT_EQ(0, std::memcmp(got.data(), one.data(), got.size() * 4)) << rows << " x " << cols << " n " << m;
    }
  }
}

}  // namespace
}  // namespace llmhost::device_test
