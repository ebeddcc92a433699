#include "model/rope_freqs.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace llmhost {

namespace {

// base ** (2i / dim) for i < dim / 2, rounded to f32 as torch computes it
// (an f32 tensor exponent; the power itself in f32).
std::vector<float> PosFreqs(double base, int64_t dim) {
  std::vector<float> out(static_cast<size_t>(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float expo = static_cast<float>(2 * i) / static_cast<float>(dim);
    out[i] = static_cast<float>(std::pow(base, static_cast<double>(expo)));
  }
  return out;
}

std::vector<float> DefaultInvFreq(double base, int64_t dim) {
  std::vector<float> f = PosFreqs(base, dim);
  for (float& v : f) v = 1.0f / v;
  return f;
}

double YarnMscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

}  // namespace

bool RopeDependsOnLength(const RopeConfig& rope) {
  return rope.type == RopeType::kDynamic || rope.type == RopeType::kLongRope;
}

Result<RopeFrequencies> ComputeRopeFrequencies(const RopeConfig& rope, int64_t head_dim,
                                               int64_t max_position_embeddings, int64_t seq_len) {
  RopeFrequencies out;
  const int64_t dim = static_cast<int64_t>(static_cast<double>(head_dim) * rope.partial_rotary_factor);
  if (dim < 2 || dim > head_dim) {
    return Status::InvalidArgument("rope: rotary dimension " + std::to_string(dim) +
                                   " out of range for head_dim " + std::to_string(head_dim));
  }
  out.rot_dim = dim / 2 * 2;
  const double base = rope.theta;
  const double max_pos = static_cast<double>(max_position_embeddings > 0 ? max_position_embeddings : 1);
  switch (rope.type) {
    case RopeType::kDefault:
      out.inv_freq = DefaultInvFreq(base, dim);
      break;
    case RopeType::kLinear:
      out.inv_freq = DefaultInvFreq(base, dim);
      for (float& v : out.inv_freq) v = static_cast<float>(v / rope.factor);
      break;
    case RopeType::kDynamic: {
      // transformers: seq_len = max(seq_len, max_position_embeddings); the
      // base grows once the sequence passes the pre-training context.
      const double len = std::max(static_cast<double>(seq_len), max_pos);
      const double b = base * std::pow(rope.factor * len / max_pos - (rope.factor - 1),
                                       static_cast<double>(dim) / static_cast<double>(dim - 2));
      out.inv_freq = DefaultInvFreq(b, dim);
      break;
    }
    case RopeType::kLlama3: {
      out.inv_freq = DefaultInvFreq(base, dim);
      const double old_ctx = static_cast<double>(rope.original_max_position_embeddings.value_or(
          max_position_embeddings));
      const double low_wavelen = old_ctx / rope.low_freq_factor;
      const double high_wavelen = old_ctx / rope.high_freq_factor;
      for (float& f : out.inv_freq) {
        const double inv = f;
        const double wavelen = 2 * std::numbers::pi / inv;
        double scaled = wavelen > low_wavelen ? inv / rope.factor : inv;
        const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
        if (medium) {
          const double smooth = (old_ctx / wavelen - rope.low_freq_factor) /
                                (rope.high_freq_factor - rope.low_freq_factor);
          scaled = (1 - smooth) * scaled / rope.factor + smooth * scaled;
        }
        f = static_cast<float>(scaled);
      }
      break;
    }
    case RopeType::kYarn: {
      const double orig = static_cast<double>(rope.original_max_position_embeddings.value_or(
          max_position_embeddings));
      const double factor = rope.factor;
      if (rope.attention_factor) {
        out.attention_scaling = static_cast<float>(*rope.attention_factor);
      } else if (rope.mscale && rope.mscale_all_dim && *rope.mscale != 0 && *rope.mscale_all_dim != 0) {
        out.attention_scaling = static_cast<float>(YarnMscale(factor, *rope.mscale) /
                                                   YarnMscale(factor, *rope.mscale_all_dim));
      } else {
        out.attention_scaling = static_cast<float>(YarnMscale(factor, 1.0));
      }
      const double beta_fast = rope.beta_fast != 0 ? rope.beta_fast : 32;
      const double beta_slow = rope.beta_slow != 0 ? rope.beta_slow : 1;
      auto correction_dim = [&](double rotations) {
        return (static_cast<double>(dim) * std::log(orig / (rotations * 2 * std::numbers::pi))) /
               (2 * std::log(base));
      };
      double low = correction_dim(beta_fast), high = correction_dim(beta_slow);
      if (rope.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
      }
      low = std::max(low, 0.0);
      high = std::min(high, static_cast<double>(dim - 1));
      if (low == high) high += 0.001;  // as transformers: avoid a zero-width ramp
      const std::vector<float> pos = PosFreqs(base, dim);
      out.inv_freq.resize(pos.size());
      for (size_t i = 0; i < pos.size(); ++i) {
        const float ramp = static_cast<float>(
            std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0));
        const float extrap_factor = 1.0f - ramp;
        const float extrap = 1.0f / pos[i];
        const float interp = static_cast<float>(1.0 / (factor * pos[i]));
        out.inv_freq[i] = interp * (1.0f - extrap_factor) + extrap * extrap_factor;
      }
      break;
    }
    case RopeType::kLongRope: {
      const int64_t orig_i = rope.original_max_position_embeddings.value_or(max_position_embeddings);
      const double orig = static_cast<double>(orig_i > 0 ? orig_i : 1);
      const double factor = max_pos / orig;
      if (rope.attention_factor) {
        out.attention_scaling = static_cast<float>(*rope.attention_factor);
      } else {
        out.attention_scaling =
            factor <= 1 ? 1.0f : static_cast<float>(std::sqrt(1 + std::log(factor) / std::log(orig)));
      }
      const std::vector<double>& ext =
          seq_len > orig_i ? rope.long_factor : rope.short_factor;
      const std::vector<float> pos = PosFreqs(base, dim);
      if (ext.size() != pos.size()) {
        return Status::InvalidArgument("rope: longrope factors have " + std::to_string(ext.size()) +
                                       " values, expected " + std::to_string(pos.size()));
      }
      out.inv_freq.resize(pos.size());
      for (size_t i = 0; i < pos.size(); ++i) {
        out.inv_freq[i] = 1.0f / (static_cast<float>(ext[i]) * pos[i]);
      }
      break;
    }
    case RopeType::kOther:
      return Status::NotSupported("rope type '" + rope.type_name + "' is not supported");
  }
  return out;
}

}  // namespace llmhost
