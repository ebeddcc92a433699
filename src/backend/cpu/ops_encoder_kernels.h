// The per-instruction-set body of the encoders' attention (ops_encoder.cpp):
// query rows [i0, i1) of sequence `s`, head `h`, against all of its keys.
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace llmhost::cpu {

using EncoderTileFn = void (*)(const float* q, const float* k, const float* v, const EncoderSeq& s, int64_t h,
                               int64_t i0, int64_t i1, const EncoderAttentionParams& p, float* scratch, float* out);

// Query rows per tile (a work item): each tile transposes its head's keys once.
inline constexpr int64_t kEncoderQueryTile = 64;

inline int64_t EncoderKeysPadded(int64_t len) { return (len + 31) / 32 * 32; }
// Floats of scratch one tile over `len` keys needs: the keys transposed, 8 rows of scores.
inline int64_t EncoderTileScratch(int64_t len, int64_t head_dim) { return (head_dim + 8) * EncoderKeysPadded(len); }

// The AVX2 + FMA body, or the AVX-512 one where the CPU runs the AVX-512
// kernels (ops_encoder_avx2.cpp); nullptr where it has neither.
EncoderTileFn EncoderTileAvx2();

}  // namespace llmhost::cpu
