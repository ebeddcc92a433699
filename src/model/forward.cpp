// The generic decoder's forward step over a batch of sequences.
//
// Per layer (N = new tokens of all sequences, rows independent):
//   h = norm(x) · q/k/v (+bias) → [q/k norm] → RoPE → K/V into the cache
//   attention through block tables → o_proj (+bias) → [post-attn norm] → x += .
//   h = norm(x) → gated MLP or MoE → [post-FFN norm] → x += .
// then the final norm and the output head on the rows that want logits.
#include <algorithm>
#include <cassert>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <unordered_set>

#include "model/model.h"
#include "model/scripted_model.h"
#include "model/rope_freqs.h"
#include "util/thread_team.h"

namespace llmhost {

namespace {

constexpr size_t kAlign = 64;

// Carves typed arrays out of one buffer; with base == nullptr it only
// measures (first pass), so the layout is written once.
class Arena {
 public:
  explicit Arena(char* base) : base_(base) {}
  template <typename T>
  T* Take(int64_t n) {
    T* p = base_ ? reinterpret_cast<T*>(base_ + used_) : nullptr;
    used_ += (static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(T) + kAlign - 1) / kAlign * kAlign;
    return p;
  }
  size_t used() const { return used_; }

 private:
  char* base_;
  size_t used_ = 0;
};

}  // namespace

int64_t BatchBucket(int64_t n) {
  if (n <= 1) return 1;
  if (n <= 64) {
    int64_t b = 1;
    while (b < n) b <<= 1;
    return b;
  }
  return (n + 63) / 64 * 64;
}

// One Forward call's state: sizes, the workspace layout, and the steps.
class ForwardPass {
 public:
  ForwardPass(Model& m, KvCache& cache, std::span<const ForwardItem> items, bool head,
              std::span<const std::optional<RowPick>> picks = {})
      : m_(m), s_(m.spec_), b_(*m.backend_), cache_(cache), items_(items), head_(head),
        picks_(head && !picks.empty() && m.backend_->PicksRows() ? picks : std::span<const std::optional<RowPick>>{}),
        rank_(m.shard_.rank), split_(m.shard_.size > 1) {}

  Status Run(ForwardOutput* out) {
    RETURN_IF_ERROR(Prepare());
    return Compute(out);
  }
  // The two halves of Run. A rank of a split model runs them on its own
  // thread, and its group reserves the sequences' blocks between them (one
  // allocator for every rank): its Prepare reserves nothing and its Compute
  // leaves the sequences' lengths to the group.
  Status Prepare();
  Status Compute(ForwardOutput* out);
  // Per item: its length after this step.
  const std::vector<int64_t>& new_lengths() const { return new_len_; }

 private:
  struct Ptrs {
    int32_t *ids, *pos, *slots, *tables, *logit_rows;
    int32_t* token_seq;  // per token row: its item's index (per-sequence RoPE tables)
    AttentionSeq* seqs;
    float* dyn_rope;
    float *x, *h, *qkv, *q, *k, *v, *attn, *t;
    float *gate, *up, *act;                   // dense MLP
    float *router, *topk_w, *moe_scale;       // MoE
    int32_t *topk_ids, *moe_idx;
    float *xe, *ge, *ue, *ye;
    float *hsel, *logits;
    RowPick* picks;   // per logits row: how to choose its token (ForwardOutput::picks)
    int32_t* picked;  // per logits row: its token
  };
  void Layout(Arena& a);
  // The key of this step's device graph (Backend::Enqueue), 0 for none.
  uint64_t GraphKey() const;
  // The longest sequence, rounded up: attention's launch is sized by it, so
  // that decode steps share a graph while their lengths stay in a bucket.
  int64_t KvLenBucket() const { return (max_len_ + 255) / 256 * 256; }
  void UploadMetadata();
  // Rows of the head this rank computes (its vocabulary slice when split).
  int64_t HeadRows() const { return m_.lm_head_.rows; }
  // A row-parallel output's partial sums over the ranks (split models only).
  void AllReduce(float* x, int64_t count) {
    if (split_) m_.shard_.comm->AllReduceSum(x, count);
  }
  // Layer li; `normed`: p_.h already holds its attention norm of x (the
  // layer before added its output to x and normed it in one op).
  void Layer(int64_t li, bool normed);
  RopeParams RopeOf(int64_t heads, int64_t stride, int rope_index) const;
  // RoPE with a table per sequence (a length-dependent rope; the one-table
  // case goes through RopeStoreKv).
  void ApplyRopeTables(float* x, int64_t heads, int64_t stride, int rope_index);
  void DenseMlp(const LayerWeights& w);
  void MoeMlp(const LayerWeights& w);
  // Per-step host data goes through the backend's staging memory (pinned on
  // a GPU), which nothing rewrites before Run's Synchronize. The staging
  // mirrors the workspace's metadata arrays (Layout puts them first): Stage
  // writes each at its array's offset, and one copy sends them all.
  template <typename T>
  void Stage(const T* dev, const std::vector<T>& host) {
    if (host.empty()) return;
    const size_t at = static_cast<size_t>(reinterpret_cast<const char*>(dev) - m_.workspace_.as<char>());
    const size_t bytes = host.size() * sizeof(T);
    assert(at + bytes <= m_.staging_.bytes);  // Prepare sized it
    std::memcpy(m_.staging_.as<char>() + at, host.data(), bytes);
    staged_ = std::max(staged_, at + bytes);
  }
  size_t staged_ = 0;  // the staged span's end

  Model& m_;
  const ModelSpec& s_;
  Backend& b_;
  KvCache& cache_;
  std::span<const ForwardItem> items_;
  bool head_;    // the output head runs (ForwardOutput::want_logits)
  // Per logits row: its pick, or none (the row's logits leave the device).
  // Empty where the rows' tokens are not picked on the device.
  std::span<const std::optional<RowPick>> picks_;
  int rank_;    // this rank's shard of the cache
  bool split_;  // a rank of a tensor-parallel group

  // Rows [begin, end) of one kind: the token rows, or the logits rows.
  struct RowRun {
    int64_t begin, end;
    RowKind kind;
  };
  // y = x · Wᵀ over rows [0, runs.back().end), one MatMul per run.
  void MatMulRuns(const WeightMatrix& w, const float* x, float* y, const std::vector<RowRun>& runs);
  // Two or three weights of the same cols over x (Backend::MatMuls), run by run.
  void MatMulsRuns(std::initializer_list<Backend::MatMulJob> jobs, const float* x, const std::vector<RowRun>& runs);
  // Appends `kind` for the next row, extending the last run when it matches.
  void AddRow(std::vector<RowRun>& runs, RowKind kind) const;

  int64_t n_ = 0;                  // new tokens in the batch
  int64_t n_rows_ = 0;             // logits rows
  std::vector<int64_t> new_len_;   // per item: length after this step
  int64_t max_len_ = 0;            // the largest of new_len_
  std::vector<int64_t> q_row_;     // per item: its first token row
  std::vector<int> dyn_index_;     // per rope: index among length-dependent ropes, or -1
  int n_dyn_ = 0;
  int64_t half_ = 0;               // rot_dim / 2 upper bound (head_dim / 2)
  int64_t table_entries_ = 0;
  bool any_moe_ = false, any_dense_ = false;
  int64_t qkv_stride_ = 0, k_stride_ = 0, v_stride_ = 0;
  std::vector<RowKind> row_kind_;  // per token row
  std::vector<RowRun> token_runs_, logit_runs_;
  Ptrs p_{};
};

void ForwardPass::Layout(Arena& a) {
  // Sizes rounded up to their bucket: every batch of a bucket finds its
  // arrays at the same addresses (what a captured device graph needs).
  const int64_t N = BatchBucket(n_), H = s_.hidden, S = BatchBucket(static_cast<int64_t>(items_.size()));
  const int64_t table_entries = BatchBucket(table_entries_), n_rows = BatchBucket(n_rows_);
  const int64_t qd = s_.q_dim(), kvd = s_.kv_dim();
  // The step's metadata first, ids to dyn_rope: UploadMetadata sends it in one copy.
  p_.ids = a.Take<int32_t>(N);
  p_.pos = a.Take<int32_t>(N);
  p_.token_seq = a.Take<int32_t>(N);
  p_.slots = a.Take<int32_t>(N);
  p_.tables = a.Take<int32_t>(table_entries);
  p_.logit_rows = a.Take<int32_t>(n_rows);
  p_.seqs = a.Take<AttentionSeq>(S);
  p_.dyn_rope = a.Take<float>(n_dyn_ * S * half_);
  p_.picks = a.Take<RowPick>(n_rows);
  p_.x = a.Take<float>(N * H);
  p_.h = a.Take<float>(N * H);
  if (s_.fused_qkv) {
    p_.qkv = a.Take<float>(N * (qd + 2 * kvd));
    p_.q = p_.qkv;
    p_.k = p_.qkv ? p_.qkv + qd : nullptr;
    p_.v = p_.qkv ? p_.qkv + qd + kvd : nullptr;
  } else {
    p_.q = a.Take<float>(N * qd);
    p_.k = a.Take<float>(N * kvd);
    p_.v = a.Take<float>(N * kvd);
  }
  p_.attn = a.Take<float>(N * qd);
  p_.t = a.Take<float>(N * H);
  if (any_dense_) {
    const int64_t I = s_.intermediate;
    if (s_.fused_gate_up) {
      p_.gate = a.Take<float>(N * 2 * I);
      p_.up = p_.gate ? p_.gate + I : nullptr;
    } else {
      p_.gate = a.Take<float>(N * I);
      p_.up = a.Take<float>(N * I);
    }
    p_.act = a.Take<float>(N * I);
  }
  if (any_moe_) {
    const int64_t E = s_.n_experts, K = s_.experts_per_token, I = s_.moe_intermediate;
    p_.router = a.Take<float>(N * E);
    p_.topk_ids = a.Take<int32_t>(N * K);
    p_.topk_w = a.Take<float>(N * K);
    p_.moe_idx = a.Take<int32_t>(N * K);
    p_.moe_scale = a.Take<float>(N * K);
    p_.xe = a.Take<float>(N * H);
    p_.ge = a.Take<float>(N * I);
    p_.ue = a.Take<float>(N * I);
    p_.ye = a.Take<float>(N * H);
  }
  p_.hsel = a.Take<float>(n_rows * H);
  p_.logits = a.Take<float>(n_rows * HeadRows());
  p_.picked = a.Take<int32_t>(n_rows);
}

Status ForwardPass::Prepare() {
  if (cache_.n_layers() != s_.n_layers || cache_.kv_dim() != s_.kv_dim()) {
    return Status::InvalidArgument("forward: the KV cache was made for another model shape");
  }
  std::unordered_set<const KvSequence*> seen;
  int64_t blocks_needed = 0;
  for (size_t i = 0; i < items_.size(); ++i) {
    const ForwardItem& it = items_[i];
    if (!it.seq) return Status::InvalidArgument("forward: item " + std::to_string(i) + " has no sequence");
    if (it.tokens.empty()) return Status::InvalidArgument("forward: item " + std::to_string(i) + " has no tokens");
    if (!seen.insert(it.seq).second) {
      return Status::InvalidArgument("forward: a sequence appears twice in one batch");
    }
    for (int32_t t : it.tokens) {
      if (t < 0 || t >= s_.vocab) {
        return Status::InvalidArgument("forward: token id " + std::to_string(t) +
                                       " outside the vocabulary [0, " + std::to_string(s_.vocab) + ")");
      }
    }
    const int64_t len = it.seq->length + static_cast<int64_t>(it.tokens.size());
    if (len > (int64_t{1} << 30)) return Status::InvalidArgument("forward: sequence too long");
    for (int64_t pos = it.seq->length; pos < len; ++pos) {
      const RowKind kind = pos >= it.generated_from ? RowKind::kGenerated : RowKind::kPrompt;
      row_kind_.push_back(kind);
      AddRow(token_runs_, kind);
    }
    if (it.logits == LogitsRows::kAll) {
      for (int64_t pos = it.seq->length; pos < len; ++pos) {
        AddRow(logit_runs_, row_kind_[static_cast<size_t>(pos - it.seq->length + n_)]);
      }
    } else if (it.logits == LogitsRows::kLast) {
      AddRow(logit_runs_, row_kind_.back());
    }
    new_len_.push_back(len);
    max_len_ = std::max(max_len_, len);
    q_row_.push_back(n_);
    n_ += static_cast<int64_t>(it.tokens.size());
    n_rows_ += it.logits == LogitsRows::kAll ? static_cast<int64_t>(it.tokens.size())
               : it.logits == LogitsRows::kLast ? 1 : 0;
    blocks_needed += cache_.BlocksNeeded(*it.seq, len);
    table_entries_ += cache_.BlocksFor(len);
  }
  if (!picks_.empty() && static_cast<int64_t>(picks_.size()) != n_rows_) {
    return Status::InvalidArgument("forward: " + std::to_string(picks_.size()) + " picks for " +
                                   std::to_string(n_rows_) + " logits rows");
  }
  if (blocks_needed > cache_.allocator().free_blocks()) {
    return Status::ResourceExhausted("forward: the KV cache has " +
                                     std::to_string(cache_.allocator().free_blocks()) +
                                     " free blocks, this batch needs " + std::to_string(blocks_needed));
  }
  for (const LayerSpec& l : s_.layers) (l.moe ? any_moe_ : any_dense_) = true;
  half_ = s_.head_dim / 2;
  for (const RopeConfig& r : s_.ropes) dyn_index_.push_back(RopeDependsOnLength(r) ? n_dyn_++ : -1);
  const int64_t qd = s_.q_dim(), kvd = s_.kv_dim();
  qkv_stride_ = s_.fused_qkv ? qd + 2 * kvd : qd;
  k_stride_ = v_stride_ = s_.fused_qkv ? qd + 2 * kvd : kvd;

  Arena measure(nullptr);
  Layout(measure);
  if (m_.workspace_.bytes < measure.used()) {
    b_.Free(m_.workspace_);
    ASSIGN_OR_RETURN(m_.workspace_, b_.Allocate(measure.used(), "forward workspace"));
  }
  Arena arena(m_.workspace_.as<char>());
  Layout(arena);
  // Staging for UploadMetadata's arrays: the workspace up to the first activation array.
  const size_t staging = static_cast<size_t>(reinterpret_cast<char*>(p_.x) - m_.workspace_.as<char>());
  if (m_.staging_.bytes < staging) {
    // The last step synchronized: nothing reads the old buffer any more.
    const size_t grown = std::max(staging, 2 * m_.staging_.bytes);
    b_.Free(m_.staging_);
    ASSIGN_OR_RETURN(m_.staging_, b_.AllocateStaging(grown, "forward staging"));
  }
  // Last, so that a failure above leaves every sequence as it was.
  if (split_) return Status::OK();  // the group reserves, once for every rank
  for (size_t i = 0; i < items_.size(); ++i) {
    RETURN_IF_ERROR(cache_.Reserve(items_[i].seq, new_len_[i]));
  }
  return Status::OK();
}

void ForwardPass::UploadMetadata() {
  const int64_t bs = cache_.block_size();
  std::vector<int32_t> ids, pos, slots, tables, logit_rows, token_seq;
  std::vector<AttentionSeq> seqs;
  // Per length-dependent rope, one table per sequence: the bucket's count apart.
  const size_t s_bucket = static_cast<size_t>(BatchBucket(static_cast<int64_t>(items_.size())));
  std::vector<float> dyn(static_cast<size_t>(n_dyn_) * s_bucket * half_, 0.0f);
  for (size_t i = 0; i < items_.size(); ++i) {
    const ForwardItem& it = items_[i];
    const KvSequence& sq = *it.seq;
    const int64_t n = static_cast<int64_t>(it.tokens.size());
    AttentionSeq as;
    as.q_row = q_row_[i];
    as.n_new = n;
    as.kv_len = new_len_[i];
    as.block_table = p_.tables + tables.size();
    as.generated_from = it.generated_from;
    seqs.push_back(as);
    for (int64_t b = 0; b < cache_.BlocksFor(new_len_[i]); ++b) tables.push_back(sq.block_table[b]);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t position = sq.length + j;
      ids.push_back(it.tokens[j]);
      token_seq.push_back(static_cast<int32_t>(i));
      pos.push_back(static_cast<int32_t>(position));
      slots.push_back(static_cast<int32_t>(sq.block_table[position / bs] * bs + position % bs));
    }
    if (it.logits == LogitsRows::kAll) {
      for (int64_t j = 0; j < n; ++j) logit_rows.push_back(static_cast<int32_t>(q_row_[i] + j));
    } else if (it.logits == LogitsRows::kLast) {
      logit_rows.push_back(static_cast<int32_t>(q_row_[i] + n - 1));
    }
    // Length-dependent RoPE: frequencies for this sequence's length (as
    // transformers: the step's largest position + 1).
    for (size_t r = 0; r < dyn_index_.size(); ++r) {
      if (dyn_index_[r] < 0) continue;
      auto table = m_.RopeTable(static_cast<int>(r), new_len_[i]);
      if (!table.ok()) continue;  // cannot happen: both regimes were computed at load
      std::copy(table->begin(), table->end(),
                dyn.begin() + (static_cast<size_t>(dyn_index_[r]) * s_bucket + i) * half_);
    }
  }
  staged_ = 0;
  Stage(p_.ids, ids);
  Stage(p_.pos, pos);
  Stage(p_.token_seq, token_seq);
  Stage(p_.slots, slots);
  Stage(p_.tables, tables);
  Stage(p_.logit_rows, logit_rows);
  Stage(p_.seqs, seqs);
  Stage(p_.dyn_rope, dyn);
  if (!picks_.empty()) {
    std::vector<RowPick> picks(picks_.size());  // a row without one: greedy, its answer unread
    for (size_t r = 0; r < picks_.size(); ++r) picks[r] = picks_[r].value_or(RowPick{});
    Stage(p_.picks, picks);
  }
  // One copy instead of one per array (each a driver call on a GPU); the gaps
  // between the arrays land in their buckets' unused tails.
  b_.CopyToDevice(m_.workspace_, 0, m_.staging_.as<char>(), staged_);
}

RopeParams ForwardPass::RopeOf(int64_t heads, int64_t stride, int rope_index) const {
  RopeParams rp;
  rp.n_heads = heads;
  rp.head_dim = s_.head_dim;
  rp.rot_dim = m_.rope_rot_dim_[static_cast<size_t>(rope_index)];
  rp.row_stride = stride;
  rp.attention_scaling = m_.rope_scaling_[static_cast<size_t>(rope_index)];
  rp.pairing = s_.rope_pairing;
  return rp;
}

void ForwardPass::ApplyRopeTables(float* x, int64_t heads, int64_t stride, int rope_index) {
  const RopeParams rp = RopeOf(heads, stride, rope_index);
  const int d = dyn_index_[static_cast<size_t>(rope_index)];
  // This rope's tables: one per sequence, half_ apart.
  const size_t s_bucket = static_cast<size_t>(BatchBucket(static_cast<int64_t>(items_.size())));
  b_.RopeTables(x, n_, p_.pos, p_.dyn_rope + static_cast<size_t>(d) * s_bucket * half_, half_, p_.token_seq, rp);
}

void ForwardPass::AddRow(std::vector<RowRun>& runs, RowKind kind) const {
  // A backend that computes both kinds alike gets one run (one MatMul).
  if (!b_.RowKindMatters()) kind = RowKind::kPrompt;
  if (!runs.empty() && runs.back().kind == kind) {
    ++runs.back().end;
  } else {
    const int64_t begin = runs.empty() ? 0 : runs.back().end;
    runs.push_back({begin, begin + 1, kind});
  }
}

void ForwardPass::MatMulRuns(const WeightMatrix& w, const float* x, float* y, const std::vector<RowRun>& runs) {
  for (const RowRun& r : runs) {
    b_.MatMul(w, x + r.begin * w.cols, r.end - r.begin, y + r.begin * w.rows, r.kind);
  }
}

void ForwardPass::MatMulsRuns(std::initializer_list<Backend::MatMulJob> jobs, const float* x,
                              const std::vector<RowRun>& runs) {
  Backend::MatMulJob at[3];
  const size_t count = std::min(jobs.size(), std::size(at));
  for (const RowRun& r : runs) {
    size_t i = 0;
    for (const Backend::MatMulJob& j : jobs) {
      if (i < count) at[i++] = {j.w, j.y + r.begin * j.w->rows};
    }
    b_.MatMuls(std::span<const Backend::MatMulJob>(at, count), x + r.begin * jobs.begin()->w->cols, r.end - r.begin,
               r.kind);
  }
}

void ForwardPass::DenseMlp(const LayerWeights& w) {
  const int64_t N = n_, I = s_.intermediate;
  if (s_.fused_gate_up) {
    MatMulRuns(w.gate_up, p_.h, p_.gate, token_runs_);  // [N, 2I]: gate | up
    b_.GatedActivation(s_.activation, p_.gate, 2 * I, p_.up, 2 * I, N, I, p_.act, I);
  } else {
    MatMulsRuns({{&w.gate, p_.gate}, {&w.up, p_.up}}, p_.h, token_runs_);
    if (w.gate_bias.valid()) b_.AddBias(p_.gate, N, I, I, w.gate_bias.as<float>());
    if (w.up_bias.valid()) b_.AddBias(p_.up, N, I, I, w.up_bias.as<float>());
    b_.GatedActivation(s_.activation, p_.gate, I, p_.up, I, N, I, p_.act, I);
  }
  MatMulRuns(w.down, p_.act, p_.t, token_runs_);
}

void ForwardPass::MoeMlp(const LayerWeights& w) {
  const int64_t N = n_, K = s_.experts_per_token;
  b_.RouterMatMul(w.router, p_.h, N, p_.router);
  b_.TopKRouting(p_.router, N, s_.n_experts, K, s_.norm_topk_prob, p_.topk_ids, p_.topk_w);
  // Dispatch happens in the backend, where the routing is: no round trip.
  MoeScratch sc;
  sc.x = p_.xe;
  sc.gate = p_.ge;
  sc.up = p_.ue;
  sc.y = p_.ye;
  sc.rows = p_.moe_idx;
  sc.scales = p_.moe_scale;
  b_.MoeFfn(w.moe, p_.h, N, p_.topk_ids, p_.topk_w, K, row_kind_, sc, p_.t);
}

void ForwardPass::Layer(int64_t li, bool normed) {
  const LayerSpec& ls = s_.layers[li];
  const LayerWeights& w = m_.layers_[li];
  const int64_t N = n_, H = s_.hidden, hd = s_.head_dim, qd = s_.q_dim(), kvd = s_.kv_dim();
  const float eps = s_.rms_eps;
  const bool one = s_.norm_add_one;

  if (!normed) b_.RmsNorm(p_.x, N, H, H, w.attn_norm.as<float>(), eps, one, p_.h);
  if (s_.fused_qkv) {
    MatMulRuns(w.qkv, p_.h, p_.qkv, token_runs_);
  } else {
    MatMulsRuns({{&w.q, p_.q}, {&w.k, p_.k}, {&w.v, p_.v}}, p_.h, token_runs_);
    if (w.q_bias.valid()) b_.AddBias(p_.q, N, qd, qd, w.q_bias.as<float>());
    if (w.k_bias.valid()) b_.AddBias(p_.k, N, kvd, kvd, w.k_bias.as<float>());
    if (w.v_bias.valid()) b_.AddBias(p_.v, N, kvd, kvd, w.v_bias.as<float>());
  }
  if (w.q_norm.valid()) {
    b_.RmsNormHeads(p_.q, N, s_.n_heads, hd, qkv_stride_, w.q_norm.as<float>(), eps, one);
    b_.RmsNormHeads(p_.k, N, s_.n_kv_heads, hd, k_stride_, w.k_norm.as<float>(), eps, one);
  }
  if (dyn_index_[static_cast<size_t>(ls.rope_index)] < 0) {  // one table for every token: one op
    b_.RopeStoreKv(p_.q, RopeOf(s_.n_heads, qkv_stride_, ls.rope_index), p_.k,
                   RopeOf(s_.n_kv_heads, k_stride_, ls.rope_index), p_.v, v_stride_, N, p_.pos,
                   m_.rope_tables_[static_cast<size_t>(ls.rope_index)].as<float>(), kvd, p_.slots,
                   cache_.k(li, rank_), cache_.v(li, rank_), cache_.dtype());
  } else {
    ApplyRopeTables(p_.q, s_.n_heads, qkv_stride_, ls.rope_index);
    ApplyRopeTables(p_.k, s_.n_kv_heads, k_stride_, ls.rope_index);
    b_.StoreKv(p_.k, k_stride_, p_.v, v_stride_, N, kvd, p_.slots, cache_.k(li, rank_), cache_.v(li, rank_),
               cache_.dtype());
  }

  AttentionParams ap;
  ap.n_heads = s_.n_heads;
  ap.n_kv_heads = s_.n_kv_heads;
  ap.head_dim = hd;
  ap.q_stride = qkv_stride_;
  ap.out_stride = qd;
  ap.block_size = cache_.block_size();
  ap.scale = s_.attn_scale;
  ap.softcap = s_.attn_softcap;
  ap.window = ls.window;
  ap.kv_dtype = cache_.dtype();
  ap.n_rows = N;
  ap.max_kv_len = KvLenBucket();
  ap.n_generated_rows = std::count(row_kind_.begin(), row_kind_.end(), RowKind::kGenerated);
  b_.Attention(p_.q, cache_.k(li, rank_), cache_.v(li, rank_), p_.seqs, static_cast<int64_t>(items_.size()), ap,
               p_.attn);
  MatMulRuns(w.o, p_.attn, p_.t, token_runs_);
  AllReduce(p_.t, N * H);  // biases and norms after the sum: whole on every rank
  if (w.o_bias.valid()) b_.AddBias(p_.t, N, H, H, w.o_bias.as<float>());
  if (w.post_attn_norm.valid()) {
    b_.RmsNorm(p_.t, N, H, H, w.post_attn_norm.as<float>(), eps, one, p_.t);
  }
  b_.AddRmsNorm(p_.x, p_.t, N, H, w.pre_ffn_norm.as<float>(), eps, one, p_.h);
  if (ls.moe) {
    MoeMlp(w);
  } else {
    DenseMlp(w);
  }
  AllReduce(p_.t, N * H);
  if (w.down_bias.valid()) b_.AddBias(p_.t, N, H, H, w.down_bias.as<float>());
  if (w.post_ffn_norm.valid()) {
    b_.RmsNorm(p_.t, N, H, H, w.post_ffn_norm.as<float>(), eps, one, p_.t);
  }
  if (li + 1 < s_.n_layers) {  // the next layer's attention norm with the add
    b_.AddRmsNorm(p_.x, p_.t, N, H, m_.layers_[li + 1].attn_norm.as<float>(), eps, one, p_.h);
  } else {
    b_.Add(p_.x, p_.t, N * H, p_.x);
  }
}

Status ForwardPass::Compute(ForwardOutput* out) {
  UploadMetadata();
  const int64_t H = s_.hidden, V = HeadRows();
  b_.Enqueue(GraphKey(), [&] {
    b_.Embedding(m_.embed_, p_.ids, n_, m_.embed_scale_, p_.x, split_ ? m_.shard_.vocab.begin : 0);
    AllReduce(p_.x, n_ * H);  // a token's row comes from the one rank that holds it, zeros elsewhere
    for (int64_t li = 0; li < s_.n_layers; ++li) Layer(li, li > 0);
    if (n_rows_ > 0) {
      b_.GatherRows(p_.x, H, p_.logit_rows, n_rows_, p_.hsel);
      b_.RmsNorm(p_.hsel, n_rows_, H, H, m_.final_norm_.as<float>(), s_.rms_eps, s_.norm_add_one, p_.hsel);
      if (head_) {
        MatMulRuns(m_.lm_head_, p_.hsel, p_.logits, logit_runs_);
        if (s_.final_softcap > 0) b_.Softcap(p_.logits, n_rows_ * V, s_.final_softcap);
        if (!picks_.empty()) b_.PickRows(p_.logits, n_rows_, V, p_.picks, p_.picked);
      }
    }
  });

  out->vocab = V;
  out->first_row.clear();
  out->n_rows.clear();
  int64_t row = 0;
  for (const ForwardItem& it : items_) {
    const int64_t n = it.logits == LogitsRows::kAll ? static_cast<int64_t>(it.tokens.size())
                      : it.logits == LogitsRows::kLast ? 1 : 0;
    out->first_row.push_back(n ? row : -1);
    out->n_rows.push_back(n);
    row += n;
  }
  out->logits.set_allocator(out->reused ? b_.ResultAllocator() : HostAllocator{});
  const bool picked = !picks_.empty();
  const bool logits = out->want_logits &&
                      (!picked || std::any_of(picks_.begin(), picks_.end(), [](const auto& p) { return !p; }));
  out->logits.resize_for_overwrite(logits ? static_cast<size_t>(n_rows_ * V) : 0);  // the copy fills it
  out->picked.resize(picked ? static_cast<size_t>(n_rows_) : 0);
  out->hidden_size = H;
  out->hidden.resize(out->want_hidden ? static_cast<size_t>(n_rows_ * H) : 0);
  auto offset = [&](const void* p) { return static_cast<size_t>(static_cast<const char*>(p) - m_.workspace_.as<char>()); };
  // The copies wait for the step (one wait on a GPU); a failed step's error
  // is sticky, so Synchronize reports it and the copied rows are dropped.
  if (n_rows_ > 0 && logits) {
    b_.CopyToHost(out->logits.data(), m_.workspace_, offset(p_.logits), out->logits.size() * sizeof(float));
  }
  if (n_rows_ > 0 && picked) {
    b_.CopyToHost(out->picked.data(), m_.workspace_, offset(p_.picked), out->picked.size() * sizeof(int32_t));
  }
  if (n_rows_ > 0 && out->want_hidden) {
    b_.CopyToHost(out->hidden.data(), m_.workspace_, offset(p_.hsel), out->hidden.size() * sizeof(float));
  }
  if (Status s = b_.Synchronize(); !s.ok()) return s.WithContext("forward: the " + b_.name() + " backend failed");
  for (size_t r = 0; r < out->picked.size(); ++r) {
    if (!picks_[r]) out->picked[r] = -1;  // its logits came back instead
  }
  if (split_) return Status::OK();  // the group moves the sequences on
  for (size_t i = 0; i < items_.size(); ++i) items_[i].seq->length = new_len_[i];
  return Status::OK();
}

uint64_t ForwardPass::GraphKey() const {
  // Only steps of generated rows repeat their shapes step after step; MoE
  // dispatch copies its expert table from the host.
  if (any_moe_) return 0;
  for (RowKind k : row_kind_) {
    if (k != RowKind::kGenerated) return 0;
  }
  // Everything a launch takes from the host: sizes (with the buckets that
  // place the workspace's arrays) and the addresses of the model, cache and
  // workspace.
  const uint64_t parts[] = {static_cast<uint64_t>(n_),
                            static_cast<uint64_t>(items_.size()),
                            static_cast<uint64_t>(n_rows_),
                            static_cast<uint64_t>(BatchBucket(table_entries_)),
                            static_cast<uint64_t>(KvLenBucket()),
                            static_cast<uint64_t>(token_runs_.size()),
                            static_cast<uint64_t>(logit_runs_.size()),
                            static_cast<uint64_t>(head_) | static_cast<uint64_t>(!picks_.empty()) << 1,
                            reinterpret_cast<uintptr_t>(&m_),
                            reinterpret_cast<uintptr_t>(m_.embed_.data),
                            reinterpret_cast<uintptr_t>(m_.workspace_.data),
                            static_cast<uint64_t>(m_.workspace_.bytes),
                            reinterpret_cast<uintptr_t>(cache_.k(0, rank_)),
                            static_cast<uint64_t>(cache_.dtype()),
                            static_cast<uint64_t>(b_.precision())};
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
  for (uint64_t v : parts) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xFF)) * 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}

Status Model::Forward(std::span<const ForwardItem> items, KvCache& cache, ForwardOutput* out) {
  out->picked.clear();  // filled only where honoured (ForwardOutput::picks)
  if (script_) return script_->Forward(items, cache, out);
  if (!shards_.empty() && !items.empty()) return ForwardSplit(items, cache, out);
  if (items.empty()) {
    ForwardOutput empty;
    empty.want_logits = out->want_logits;
    empty.want_hidden = out->want_hidden;
    empty.picks = std::move(out->picks);
    empty.vocab = spec_.vocab;
    empty.hidden_size = spec_.hidden;
    *out = std::move(empty);
    return Status::OK();
  }
  ForwardPass pass(*this, cache, items, out->want_logits, out->picks);
  return pass.Run(out);
}

Status Model::ForwardSplit(std::span<const ForwardItem> items, KvCache& cache, ForwardOutput* out) {
  const int n = tensor_parallel();
  if (cache.ranks() != n) {
    return Status::InvalidArgument("forward: the KV cache has " + std::to_string(cache.ranks()) +
                                   " shards, the model " + std::to_string(n) + " ranks");
  }
  std::vector<std::unique_ptr<ForwardPass>> passes(static_cast<size_t>(n));
  std::vector<Status> status(static_cast<size_t>(n));
  std::vector<ForwardOutput> parts(static_cast<size_t>(n));
  team_->Run([&](int r) {
    const size_t i = static_cast<size_t>(r);
    passes[i] = std::make_unique<ForwardPass>(*shards_[i], cache, items, out->want_logits);
    status[i] = passes[i]->Prepare();
  });
  for (const Status& s : status) RETURN_IF_ERROR(s);
  // Every rank validated the same batch: one reservation serves them all.
  const std::vector<int64_t>& new_len = passes[0]->new_lengths();
  for (size_t i = 0; i < items.size(); ++i) RETURN_IF_ERROR(cache.Reserve(items[i].seq, new_len[i]));
  team_->Run([&](int r) {
    const size_t i = static_cast<size_t>(r);
    parts[i].want_logits = out->want_logits;
    parts[i].want_hidden = out->want_hidden && r == 0;  // the hidden state is the same on every rank
    status[i] = passes[i]->Compute(&parts[i]);
  });
  for (const Status& s : status) RETURN_IF_ERROR(s);
  // Each rank's logits are its vocabulary columns of every row.
  const ForwardOutput& p0 = parts[0];
  const int64_t V = spec_.vocab;
  int64_t rows = 0;
  for (int64_t k : p0.n_rows) rows += k;
  out->vocab = V;
  out->first_row = p0.first_row;
  out->n_rows = p0.n_rows;
  out->picked.clear();  // a group returns logits (its vocabulary is split over the ranks)
  out->logits.clear();  // then zeros, as the shards fill their columns
  out->logits.resize(out->want_logits ? static_cast<size_t>(rows * V) : 0);
  if (out->want_logits) {
    for (int r = 0; r < n; ++r) {
      const ForwardOutput& p = parts[static_cast<size_t>(r)];
      const int64_t begin = shards_[static_cast<size_t>(r)]->shard_.vocab.begin, cols = p.vocab;
      for (int64_t row = 0; row < rows; ++row) {
        std::copy_n(p.logits.data() + row * cols, cols, out->logits.data() + row * V + begin);
      }
    }
  }
  out->hidden_size = p0.hidden_size;
  out->hidden = std::move(parts[0].hidden);
  for (size_t i = 0; i < items.size(); ++i) items[i].seq->length = new_len[i];
  return Status::OK();
}

}  // namespace llmhost
