#include "backend/cuda/pick_rows.cuh"

#include <cfloat>
#include <cmath>

#include "backend/cuda/common.cuh"

namespace llmhost::cuda {
namespace {

// One block a row. The row is read again by every pass (it stays mostly in
// L2): a vocabulary row does not fit in shared memory.
constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xFFFFFFFFu;
// The radix select's digits over the 32-bit order key, from the top.
constexpr int kPasses = 3;
constexpr int kMaxBins = 2048;
// Weights w in [0, 1] as w * 2^40 rounded down: integer sums are exact and
// the same in any order (2^24 tokens of weight 1 would overflow).
constexpr float kFixedOne = 1099511627776.0f;

using u64 = unsigned long long;

struct Shared {
  u64 hist[kMaxBins];          // a radix pass's amount per digit
  u64 cand[kMaxPickTopK];      // top_k: the candidates' sort keys
  u64 warp_sums[kWarps];
  float warp_max[kWarps];
  int32_t warp_best[kWarps];
  float max;                   // the row's largest z
  int32_t best;                // its lowest index
  uint32_t prefix;             // the key digits chosen so far
  u64 target;                  // the amount the selection must reach
  u64 above;                   // the amount of the keys above the chosen prefix
  u64 bin_amount;              // the amount of the chosen prefix
  int32_t walk_warp;           // the warp whose range holds the index-order target
  u64 walk_rel;                // the target within that range
  int32_t pick;
  uint32_t count;
};

// z: NaN as -inf and +inf as the largest float (SanitizeLogits).
__device__ __forceinline__ float Sanitize(float v) {
  return isnan(v) ? -INFINITY : (v == INFINITY ? FLT_MAX : v);
}

// A key that orders like z, -0 as +0 (the CPU's z[a] == z[b] ties them).
__device__ __forceinline__ uint32_t OrderKey(float z) {
  uint32_t b = __float_as_uint(z);
  if (b == 0x80000000u) b = 0;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ float FromKey(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k ^ 0x80000000u) : ~k);
}

// The CPU's ExpShifted weight: the top weighs exactly 1, also when inv_t is
// +inf (a temperature near 0). expf, not __expf: the host's exp to an ulp.
__device__ __forceinline__ float Weight(float z, float m, float inv_t) {
  const float d = z - m;
  return d == 0 ? 1.0f : expf(d * inv_t);
}

// NaN (an infinite temperature times -inf) weighs 0.
__device__ __forceinline__ u64 Fixed(float w) {
  return w > 0 ? static_cast<u64>(w * kFixedOne) : 0;
}

// The better of two candidates: the larger z, the lower index between equals.
__device__ __forceinline__ void Better(float& v, int32_t& i, float ov, int32_t oi) {
  if (ov > v || (ov == v && oi < i)) v = ov, i = oi;
}

__device__ __forceinline__ u64 WarpSumU64(u64 v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

__device__ __forceinline__ u64 WarpInclusiveScan(u64 v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const u64 n = __shfl_up_sync(kFull, v, o);
    if (lane >= o) v += n;
  }
  return v;
}

// Inclusive scan over the block in thread order; *total gets the block's sum.
__device__ u64 BlockInclusiveScan(u64 v, Shared& sh, u64* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = WarpInclusiveScan(v, lane);
  __syncthreads();  // warp_sums' last readers are done
  if (lane == 31) sh.warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) sh.warp_sums[lane] = WarpInclusiveScan(sh.warp_sums[lane], lane);
  __syncthreads();
  if (warp > 0) v += sh.warp_sums[warp - 1];
  *total = sh.warp_sums[kWarps - 1];
  return v;
}

// hist[bin] += amount for the warp's lanes. Rows whose keys crowd into one
// digit (equal logits) would make a warp's 32 atomics wait on one another:
// a warp of one digit adds its sum once.
__device__ __forceinline__ void AddToBin(u64* hist, uint32_t bin, u64 amount, int lane) {
  const unsigned any = __ballot_sync(kFull, amount != 0);
  if (any == 0) return;
  const uint32_t first = __shfl_sync(kFull, bin, __ffs(any) - 1);
  if (__all_sync(kFull, amount == 0 || bin == first)) {
    amount = WarpSumU64(amount);
    if (lane == 0) atomicAdd(&hist[first], amount);
  } else if (amount != 0) {
    atomicAdd(&hist[bin], amount);
  }
}

// Radix select from the top digit: the key K* where the amount of the keys
// >= K* (counts, or fixed-point mass when kMass) first reaches the target.
// Leaves sh.prefix = K*, sh.above = the amount above K*, sh.bin_amount =
// the amount at K*. The target is count_target, or for kMass top_p of the
// row's whole mass (known after the first pass), rounded up.
template <bool kMass>
__device__ void RadixSelect(const float* row, int32_t cols, float m, float inv_t, u64 count_target, double top_p,
                            Shared& sh) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  uint32_t prefix = 0;
  u64 above = 0, target = count_target;
  for (int pass = 0; pass < kPasses; ++pass) {
    const int bits = pass == kPasses - 1 ? 10 : 11;
    const int shift = pass == 0 ? 21 : (pass == 1 ? 10 : 0);
    const int bins = 1 << bits;
    for (int b = tid; b < bins; b += kThreads) sh.hist[b] = 0;
    __syncthreads();
    for (int base = warp * 32; base < cols; base += kThreads) {
      const int i = base + lane;
      uint32_t bin = 0;
      u64 amount = 0;
      if (i < cols) {
        const float z = Sanitize(row[i]);
        const uint32_t key = OrderKey(z);
        if (pass == 0 || (key >> (shift + bits)) == prefix) {
          bin = (key >> shift) & (bins - 1);
          amount = kMass ? Fixed(Weight(z, m, inv_t)) : 1;
        }
      }
      AddToBin(sh.hist, bin, amount, lane);
    }
    __syncthreads();
    // Thread t owns the digits [bins - (t + 1) * per, bins - t * per): the
    // scan over threads sums the digits from the top down.
    const int per = bins / kThreads;
    const int top = bins - 1 - tid * per;
    u64 own = 0;
    for (int j = 0; j < per; ++j) own += sh.hist[top - j];
    u64 total;
    const u64 incl = BlockInclusiveScan(own, sh, &total);
    if (kMass && pass == 0) {
      // top_p of the whole mass, rounded up: cum >= top_p * all in integers.
      const double t = ceil(top_p * static_cast<double>(total));
      target = t >= static_cast<double>(total) ? total : static_cast<u64>(t);
      if (target == 0) target = 1;
    }
    const u64 rel = target - above;  // > 0, and at most this pass's total
    if (incl - own < rel && rel <= incl) {
      u64 acc = incl - own;
      for (int j = 0; j < per; ++j) {
        const u64 h = sh.hist[top - j];
        if (acc + h >= rel || j == per - 1) {
          sh.prefix = (prefix << bits) | static_cast<uint32_t>(top - j);
          sh.above = above + acc;
          sh.bin_amount = h;
          break;
        }
        acc += h;
      }
    }
    __syncthreads();
    prefix = sh.prefix;
    above = sh.above;
  }
  if (tid == 0) sh.target = target;
  __syncthreads();
}

// The first index i (in index order) where amount(0..i) summed exceeds
// target_of(total): every warp sums a contiguous range, warp 0 finds the
// range that holds the target, and that warp walks it 32 at a time. Returns
// `fallback` only if the target is not below the total.
template <typename Amount, typename TargetOf>
__device__ int32_t FirstPast(int32_t cols, Shared& sh, int32_t fallback, Amount amount, TargetOf target_of) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int span = (cols + kThreads - 1) / kThreads * 32;  // a multiple of 32 per warp
  const int begin = warp * span, end = min(cols, begin + span);
  u64 sum = 0;
  for (int i = begin + lane; i < end; i += 32) sum += amount(i);
  sum = WarpSumU64(sum);
  __syncthreads();  // warp_sums' last readers are done
  if (lane == 0) sh.warp_sums[warp] = sum;
  if (tid == 0) sh.pick = fallback;
  __syncthreads();
  if (warp == 0) {
    const u64 own = sh.warp_sums[lane];
    const u64 incl = WarpInclusiveScan(own, lane);
    const u64 total = __shfl_sync(kFull, incl, 31);
    const u64 r = target_of(total);
    const int w = min(__popc(__ballot_sync(kFull, incl <= r)), kWarps - 1);
    const u64 rel = __shfl_sync(kFull, r - (incl - own), w);
    if (lane == 0) sh.walk_warp = r < total ? w : -1, sh.walk_rel = rel;
  }
  __syncthreads();
  if (warp == sh.walk_warp) {
    const u64 rel = sh.walk_rel;
    u64 run = 0;
    for (int base = begin; base < end; base += 32) {
      const int i = base + lane;
      const u64 incl = WarpInclusiveScan(i < end ? amount(i) : 0, lane);
      const unsigned hit = __ballot_sync(kFull, run + incl > rel);
      if (hit != 0) {
        if (lane == __ffs(hit) - 1) sh.pick = i;
        break;
      }
      run += __shfl_sync(kFull, incl, 31);
    }
  }
  __syncthreads();
  return sh.pick;
}

// floor(u * total), below total (total > 0).
__device__ __forceinline__ u64 DrawTarget(double u, u64 total) {
  const double r = u * static_cast<double>(total);
  const u64 t = r > 0 ? static_cast<u64>(r) : 0;
  return t < total ? t : total - 1;
}

// The top_k candidates (keys above K*, then the lowest indices at K* up to
// `tie_last`), sorted in the CPU's Better order, weighed, cut by top_p and
// min_p, and drawn in that order. Writes out.
__device__ void DrawTopK(const float* row, int32_t cols, const RowPick& p, float m, float inv_t, int32_t k,
                         uint32_t k_star, int32_t tie_last, Shared& sh, int32_t* out) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) sh.count = 0;
  __syncthreads();
  for (int base = warp * 32; base < cols; base += kThreads) {
    const int i = base + lane;
    uint32_t key = 0;
    bool in = false;
    if (i < cols) {
      key = OrderKey(Sanitize(row[i]));
      in = key > k_star || (key == k_star && i <= tie_last);
    }
    const unsigned ballot = __ballot_sync(kFull, in);
    if (ballot == 0) continue;
    uint32_t slot = 0;
    if (lane == 0) slot = atomicAdd(&sh.count, static_cast<uint32_t>(__popc(ballot)));
    slot = __shfl_sync(kFull, slot, 0) + __popc(ballot & ((1u << lane) - 1));
    // Ascending order of (~key, index) is Better's: z descending, index ascending.
    if (in && slot < static_cast<uint32_t>(k)) sh.cand[slot] = (static_cast<u64>(~key) << 32) | static_cast<uint32_t>(i);
  }
  int n2 = 32;
  while (n2 < k) n2 <<= 1;
  __syncthreads();
  for (int j = k + tid; j < n2; j += kThreads) sh.cand[j] = ~0ull;
  __syncthreads();
  // Bitonic sort of the n2 keys (all distinct but the padding).
  for (int size = 2; size <= n2; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      const int other = tid ^ stride;
      if (tid < n2 && other > tid) {
        const u64 a = sh.cand[tid], b = sh.cand[other];
        if ((a > b) == ((tid & size) == 0)) sh.cand[tid] = b, sh.cand[other] = a;
      }
      __syncthreads();
    }
  }
  const bool is_cand = tid < k;
  const u64 key64 = is_cand ? sh.cand[tid] : 0;
  const float w = is_cand ? Weight(FromKey(~static_cast<uint32_t>(key64 >> 32)), m, inv_t) : 0.0f;
  u64 wf = Fixed(w);
  u64 total;
  u64 incl = BlockInclusiveScan(wf, sh, &total);
  int keep = k;
  if (p.top_p < 1) {
    // The shortest prefix whose mass reaches top_p of the candidates'.
    const double t = ceil(p.top_p * static_cast<double>(total));
    const u64 target = t >= static_cast<double>(total) ? total : static_cast<u64>(t);
    keep = min(k, __syncthreads_count(is_cand && incl < target) + 1);
  }
  // min_p relative to the top weight (1), compared in double as the host does.
  if (tid >= keep || (p.min_p > 0 && static_cast<double>(w) < p.min_p)) wf = 0;
  incl = BlockInclusiveScan(wf, sh, &total);
  if (total == 0) {  // cannot happen: the top weighs 1 >= min_p
    if (tid == 0) out[blockIdx.x] = static_cast<int32_t>(sh.cand[0] & 0xFFFFFFFFu);
    return;
  }
  const u64 r = DrawTarget(p.u, total);
  const int at = __syncthreads_count(tid < keep && incl <= r);  // the first whose prefix passes r
  if (tid == at) out[blockIdx.x] = static_cast<int32_t>(key64 & 0xFFFFFFFFu);
}

__global__ void __launch_bounds__(kThreads, 1)
    PickRowsKernel(const float* x, int32_t cols, const RowPick* picks, int32_t* out) {
  WaitForPriorGrid();
  __shared__ Shared sh;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const float* row = x + int64_t{blockIdx.x} * cols;
  const RowPick p = picks[blockIdx.x];

  // The largest z and its lowest index: greedy's token, and the shift of the
  // weights. Every z -inf: index 0 (a -inf is the best of all -inf).
  float v = -INFINITY;
  int32_t best = cols;
  for (int i = tid; i < cols; i += kThreads) Better(v, best, Sanitize(row[i]), i);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(kFull, v, o);
    const int32_t oi = __shfl_xor_sync(kFull, best, o);
    Better(v, best, ov, oi);
  }
  if (lane == 0) sh.warp_max[warp] = v, sh.warp_best[warp] = best;
  __syncthreads();
  if (warp == 0) {
    v = sh.warp_max[lane];
    best = sh.warp_best[lane];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(kFull, v, o);
      const int32_t oi = __shfl_xor_sync(kFull, best, o);
      Better(v, best, ov, oi);
    }
    if (lane == 0) sh.max = v, sh.best = best;
  }
  __syncthreads();
  const float m = sh.max;
  best = sh.best;
  const int32_t top_k = min(p.top_k, kMaxPickTopK);
  // Greedy, every token banned, or top_k 1: the lowest index of the largest.
  if (p.temperature <= 0 || !(m > -INFINITY) || top_k == 1) {
    if (tid == 0) out[blockIdx.x] = best;
    return;
  }
  const double inv_t_d = 1.0 / p.temperature;
  const float inv_t = inv_t_d > FLT_MAX ? INFINITY : static_cast<float>(inv_t_d);

  if (top_k > 0 && top_k < cols) {
    RadixSelect<false>(row, cols, m, inv_t, static_cast<u64>(top_k), 1.0, sh);
    const uint32_t k_star = sh.prefix;
    const u64 need = static_cast<u64>(top_k) - sh.above;
    int32_t tie_last = cols;  // every token at K* is in
    if (need < sh.bin_amount) {
      tie_last = FirstPast(
          cols, sh, cols - 1,
          [&](int i) -> u64 { return OrderKey(Sanitize(row[i])) == k_star ? 1 : 0; },
          [&](u64) -> u64 { return need - 1; });
    }
    DrawTopK(row, cols, p, m, inv_t, top_k, k_star, tie_last, sh, out);
    return;
  }

  // Kept by top_p: keys above K*, and at K* the indices up to tie_last.
  uint32_t k_star = 0;
  int32_t tie_last = cols;
  if (p.top_p < 1) {
    RadixSelect<true>(row, cols, m, inv_t, 0, p.top_p, sh);
    k_star = sh.prefix;
    // Every token at K* weighs the same: how many of them top_p needs.
    const u64 unit = Fixed(Weight(FromKey(k_star), m, inv_t));
    if (unit > 0) {
      const u64 need = (sh.target - sh.above + unit - 1) / unit;
      if (need < sh.bin_amount / unit) {
        tie_last = FirstPast(
            cols, sh, cols - 1,
            [&](int i) -> u64 { return OrderKey(Sanitize(row[i])) == k_star ? 1 : 0; },
            [&](u64) -> u64 { return need - 1; });
      }
    }
  }
  // min_p as the host applies it here: below the float threshold.
  const float min_w = p.min_p > 0 ? static_cast<float>(p.min_p) : 0.0f;
  const int32_t pick = FirstPast(
      cols, sh, best,
      [&](int i) -> u64 {
        const float z = Sanitize(row[i]);
        const uint32_t key = OrderKey(z);
        if (key < k_star || (key == k_star && i > tie_last)) return 0;
        const float w = Weight(z, m, inv_t);
        return w < min_w ? 0 : Fixed(w);
      },
      [&](u64 total) -> u64 { return DrawTarget(p.u, total); });
  if (tid == 0) out[blockIdx.x] = pick;
}

}  // namespace

void LaunchPickRows(const float* x, int64_t rows, int64_t cols, const RowPick* picks, int32_t* out, cudaStream_t s) {
  if (rows > 0 && cols > 0) {
    LaunchPdl(PickRowsKernel, dim3(static_cast<unsigned>(rows)), dim3(kThreads), 0, s, x, static_cast<int32_t>(cols),
              picks, out);
  }
}

}  // namespace llmhost::cuda
