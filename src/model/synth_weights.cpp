// Synthetic weights: which tensors a model of a given spec has, and their
// random contents, generated block by block from a counter-based stream so
// that the bytes depend only on (seed, tensor, position), never on the
// thread count or the write chunking.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "backend/cpu/matmul.h"
#include "model/synth_internal.h"

namespace llmhost::synth {

namespace {

constexpr int64_t kBlock = int64_t{1} << 16;  // elements per random-stream block
constexpr int64_t kChunkBlocks = 64;          // blocks generated (in parallel) per write

uint64_t SplitMix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t StreamKey(uint64_t seed, const std::string& name) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
  uint64_t s = seed ^ h;
  return SplitMix(s);
}

// Approximately N(0, 1): the sum of four 16-bit uniforms, centred and scaled.
float NormalFrom(uint64_t r) {
  const int64_t sum = static_cast<int64_t>(r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) +
                      (r >> 48);
  constexpr double kMean = 4 * 65535 / 2.0;
  const double kStd = 65536.0 / std::sqrt(3.0);
  return static_cast<float>((static_cast<double>(sum) - kMean) / kStd);
}

void Put16(char* p, uint16_t v) { std::memcpy(p, &v, 2); }

// The scale of group `g` from its stream (bf16-rounded, as stored).
float GroupScale(uint64_t r, int bits) {
  // Codes uniform on [0, 2^bits) spread over ±sqrt(3) std: the same
  // standard deviation as the bf16 matrices.
  const float base = 2 * std::sqrt(3.0f) * kWeightStd / static_cast<float>((1 << bits) - 1);
  const float jitter = 0.75f + 0.5f * static_cast<float>(r >> 40) / static_cast<float>(1 << 24);
  return Bf16ToF32(F32ToBf16(base * jitter));
}

// Fills elements [b * kBlock, b * kBlock + n) of `t` into `out`.
void FillBlock(const Tensor& t, uint64_t key, int64_t b, int64_t n, char* out) {
  uint64_t s = key ^ (static_cast<uint64_t>(b) * 0xD1B54A32D192ED03ull);
  SplitMix(s);
  switch (t.fill) {
    case Fill::kNormal:
      for (int64_t i = 0; i < n; ++i) Put16(out + 2 * i, F32ToBf16(kWeightStd * NormalFrom(SplitMix(s))));
      break;
    case Fill::kConstant: {
      if (t.spec.dtype == DType::kF32) {
        for (int64_t i = 0; i < n; ++i) std::memcpy(out + 4 * i, &t.value, 4);
        break;
      }
      const uint16_t v = F32ToBf16(t.value);
      for (int64_t i = 0; i < n; ++i) Put16(out + 2 * i, v);
      break;
    }
    case Fill::kFp8Codes:
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<char>(F32ToFp8E4M3(kFp8Spread * NormalFrom(SplitMix(s))));
      break;
    case Fill::kFp8Scales:
      for (int64_t i = 0; i < n; ++i) {
        const float jitter = 0.75f + 0.5f * static_cast<float>(SplitMix(s) >> 40) / static_cast<float>(1 << 24);
        const float v = kWeightStd / kFp8Spread * jitter;
        std::memcpy(out + 4 * i, &v, 4);
      }
      break;
    case Fill::kF16Scales:
      for (int64_t i = 0; i < n; ++i) Put16(out + 2 * i, F32ToF16(GroupScale(SplitMix(s), t.bits)));
      break;
    case Fill::kGroupIndex:
      for (int64_t i = 0; i < n; ++i) {
        const int32_t g = static_cast<int32_t>((b * kBlock + i) / static_cast<int64_t>(t.value));
        std::memcpy(out + 4 * i, &g, 4);
      }
      break;
    case Fill::kRandomBits:
      // Uniform 32-bit words hold uniform codes at every bit width that
      // divides 32 (MLX packs element j at bits [j * bits, (j + 1) * bits)).
      for (int64_t i = 0; i < n; i += 2) {
        const uint64_t r = SplitMix(s);
        const uint32_t w[2] = {static_cast<uint32_t>(r), static_cast<uint32_t>(r >> 32)};
        std::memcpy(out + 4 * i, w, static_cast<size_t>(std::min<int64_t>(2, n - i)) * 4);
      }
      break;
    case Fill::kMlxScales:
    case Fill::kMlxBiases:
      for (int64_t i = 0; i < n; ++i) {
        const float scale = GroupScale(SplitMix(s), t.bits);
        const float v = t.fill == Fill::kMlxScales
                            ? scale
                            : -scale * static_cast<float>((1 << t.bits) - 1) / 2;
        Put16(out + 2 * i, F32ToBf16(v));
      }
      break;
  }
}

class Planner {
 public:
  Planner(SynthDType dtype, int group_size) : dtype_(dtype), group_(group_size) {}
  int bits() const { return dtype_ == SynthDType::kMlx8 ? 8 : 4; }

  // A [rows, cols] matrix (or `stack` of them when stack > 0, MLX only).
  // `layer`: a decoder layer's Linear, the modules GPTQ / AWQ / FP8
  // checkpoints quantize (embeddings, head and router stay 16-bit).
  void Matrix(const std::string& module, int64_t rows, int64_t cols, int64_t stack = 0, bool layer = true) {
    auto shape = [&](int64_t last) {
      std::vector<int64_t> s{rows, last};
      if (stack > 0) s.insert(s.begin(), stack);
      return s;
    };
    if (dtype_ == SynthDType::kBF16 || (!IsMlx(dtype_) && !layer)) {
      Add(module + ".weight", DType::kBF16, shape(cols), Fill::kNormal);
      return;
    }
    if (dtype_ == SynthDType::kFp8) {
      Add(module + ".weight", DType::kF8_E4M3, shape(cols), Fill::kFp8Codes);
      Add(module + ".weight_scale_inv", DType::kF32,
          {(rows + kFp8Block - 1) / kFp8Block, (cols + kFp8Block - 1) / kFp8Block}, Fill::kFp8Scales);
      return;
    }
    if (dtype_ == SynthDType::kW4A16) {
      // compressed-tensors pack-quantized, asymmetric: zeros packed down the outputs.
      Add(module + ".weight_packed", DType::kI32, {rows, cols / 8}, Fill::kRandomBits);
      Add(module + ".weight_scale", DType::kBF16, {rows, cols / group_}, Fill::kMlxScales);
      Add(module + ".weight_zero_point", DType::kI32, {rows / 8, cols / group_}, Fill::kRandomBits);
      return;
    }
    if (dtype_ == SynthDType::kGptq4 || dtype_ == SynthDType::kAwq4) {
      // Codes uniform in 0..15 around the zero 8 (GPTQ v1 stores it as 7).
      const bool gptq = dtype_ == SynthDType::kGptq4;
      Add(module + ".qweight", DType::kI32, gptq ? std::vector<int64_t>{cols / 8, rows} : std::vector<int64_t>{cols, rows / 8},
          Fill::kRandomBits);
      // Zeros uniform over the codes, as asymmetric grids give (each group
      // and output its own: a wrong index into them shows).
      Add(module + ".qzeros", DType::kI32, {cols / group_, rows / 8}, Fill::kRandomBits);
      Add(module + ".scales", DType::kF16, {cols / group_, rows}, Fill::kF16Scales);
      if (gptq) {
        Add(module + ".g_idx", DType::kI32, {cols}, Fill::kGroupIndex);
        out_.back().value = static_cast<float>(group_);
      }
      return;
    }
    Add(module + ".weight", DType::kU32, shape(cols * bits() / 32), Fill::kRandomBits);
    Add(module + ".scales", DType::kBF16, shape(cols / group_), Fill::kMlxScales);
    Add(module + ".biases", DType::kBF16, shape(cols / group_), Fill::kMlxBiases);
    out_.back().stream = module + ".scales";
  }
  void Vector(const std::string& name, int64_t n, Fill fill, float value = 0) {
    Add(name, DType::kBF16, {n}, fill);
    out_.back().value = value;
  }
  std::vector<Tensor> Take() { return std::move(out_); }

 private:
  void Add(const std::string& name, DType dtype, std::vector<int64_t> shape, Fill fill) {
    Tensor t;
    t.spec = {name, dtype, std::move(shape)};
    t.fill = fill;
    t.bits = bits();
    t.stream = name;
    out_.push_back(std::move(t));
  }
  SynthDType dtype_;
  int group_;
  std::vector<Tensor> out_;
};

}  // namespace

int64_t NumElements(const SafetensorsTensorSpec& s) {
  int64_t n = 1;
  for (int64_t d : s.shape) n *= d;
  return n;
}

uint64_t TensorBytes(const Tensor& t) {
  return static_cast<uint64_t>(NumElements(t.spec)) * DTypeSize(t.spec.dtype);
}

std::vector<Tensor> PlanTensors(const ModelSpec& s, SynthDType dtype, int group_size) {
  Planner p(dtype, group_size);
  const float norm = s.norm_add_one ? 0.0f : 1.0f;  // Gemma multiplies by 1 + w
  const int64_t H = s.hidden, qd = s.q_dim(), kvd = s.kv_dim();
  p.Matrix("model.embed_tokens", s.vocab, H, 0, false);
  if (!s.tie_embeddings) p.Matrix("lm_head", s.vocab, H, 0, false);
  p.Vector("model.norm.weight", H, Fill::kConstant, norm);
  for (int64_t i = 0; i < s.n_layers; ++i) {
    const std::string l = "model.layers." + std::to_string(i) + ".";
    p.Vector(l + "input_layernorm.weight", H, Fill::kConstant, norm);
    p.Vector(l + "post_attention_layernorm.weight", H, Fill::kConstant, norm);
    if (s.sandwich_norms) {
      p.Vector(l + "pre_feedforward_layernorm.weight", H, Fill::kConstant, norm);
      p.Vector(l + "post_feedforward_layernorm.weight", H, Fill::kConstant, norm);
    }
    if (s.qk_norm) {
      p.Vector(l + "self_attn.q_norm.weight", s.head_dim, Fill::kConstant, norm);
      p.Vector(l + "self_attn.k_norm.weight", s.head_dim, Fill::kConstant, norm);
    }
    if (s.fused_qkv) {
      p.Matrix(l + "self_attn.qkv_proj", qd + 2 * kvd, H);
    } else {
      p.Matrix(l + "self_attn.q_proj", qd, H);
      p.Matrix(l + "self_attn.k_proj", kvd, H);
      p.Matrix(l + "self_attn.v_proj", kvd, H);
      if (s.qkv_bias) {
        p.Vector(l + "self_attn.q_proj.bias", qd, Fill::kNormal);
        p.Vector(l + "self_attn.k_proj.bias", kvd, Fill::kNormal);
        p.Vector(l + "self_attn.v_proj.bias", kvd, Fill::kNormal);
      }
    }
    p.Matrix(l + "self_attn.o_proj", H, qd);
    if (s.o_bias) p.Vector(l + "self_attn.o_proj.bias", H, Fill::kNormal);

    if (s.layers[static_cast<size_t>(i)].moe) {
      const int64_t E = s.n_experts, I = s.moe_intermediate;
      p.Matrix(l + "mlp.gate", E, H, 0, false);
      if (!IsMlx(dtype)) {
        for (int64_t e = 0; e < E; ++e) {
          const std::string x = l + "mlp.experts." + std::to_string(e) + ".";
          p.Matrix(x + "gate_proj", I, H);
          p.Matrix(x + "up_proj", I, H);
          p.Matrix(x + "down_proj", H, I);
        }
      } else {
        p.Matrix(l + "mlp.switch_mlp.gate_proj", I, H, E);
        p.Matrix(l + "mlp.switch_mlp.up_proj", I, H, E);
        p.Matrix(l + "mlp.switch_mlp.down_proj", H, I, E);
      }
      continue;
    }
    const int64_t I = s.intermediate;
    if (s.fused_gate_up) {
      p.Matrix(l + "mlp.gate_up_proj", 2 * I, H);
    } else {
      p.Matrix(l + "mlp.gate_proj", I, H);
      p.Matrix(l + "mlp.up_proj", I, H);
      if (s.mlp_bias) {
        p.Vector(l + "mlp.gate_proj.bias", I, Fill::kNormal);
        p.Vector(l + "mlp.up_proj.bias", I, Fill::kNormal);
      }
    }
    p.Matrix(l + "mlp.down_proj", H, I);
    if (s.mlp_bias) p.Vector(l + "mlp.down_proj.bias", H, Fill::kNormal);
  }
  return p.Take();
}

void FillElements(const Tensor& t, uint64_t seed, int64_t first, int64_t count, char* out, ThreadPool* pool) {
  const uint64_t key = StreamKey(seed, t.stream);
  const int64_t esize = static_cast<int64_t>(DTypeSize(t.spec.dtype));
  const int64_t b0 = first / kBlock, blocks = (count + kBlock - 1) / kBlock;
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      const int64_t len = std::min(kBlock, count - j * kBlock);
      FillBlock(t, key, b0 + j, len, out + j * kBlock * esize);
    }
  };
  if (pool && blocks > 1) {
    pool->ParallelFor(blocks, 1, run);
  } else {
    run(0, blocks);
  }
}

Status WriteWeights(const std::string& path, const std::vector<Tensor>& tensors, uint64_t seed,
                    ThreadPool* pool) {
  std::vector<SafetensorsTensorSpec> specs;
  std::map<std::string, const Tensor*> by_name;
  for (const Tensor& t : tensors) {
    specs.push_back(t.spec);
    by_name[t.spec.name] = &t;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsStreamWriter> w,
                   SafetensorsStreamWriter::Create(path, specs, {{"format", "pt"}}));
  std::string chunk;
  for (const SafetensorsTensorSpec& spec : w->layout()) {
    const Tensor& t = *by_name.at(spec.name);
    const int64_t n = NumElements(spec);
    for (int64_t e0 = 0; e0 < n; e0 += kChunkBlocks * kBlock) {
      const int64_t count = std::min(n - e0, kChunkBlocks * kBlock);
      chunk.resize(static_cast<size_t>(count) * DTypeSize(spec.dtype));
      FillElements(t, seed, e0, count, chunk.data(), pool);
      RETURN_IF_ERROR(w->Append(chunk));
    }
  }
  return w->Finish();
}

}  // namespace llmhost::synth
