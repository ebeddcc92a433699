#include "engine/engine.h"

#include <algorithm>
#include <utility>

#include "kv/fingerprint.h"
#include "model/generate.h"
#include "model/random_model.h"

namespace llmhost {

Result<std::unique_ptr<Engine>> Engine::Create(Model* model, const Tokenizer* tokenizer,
                                               EngineOptions options) {
  if (options.block_size <= 0 || options.block_size > (1 << 20)) {
    return Status::InvalidArgument("engine: block_size must be in [1, 1048576], got " +
                                   std::to_string(options.block_size));
  }
  if (options.max_concurrent_requests <= 0) {
    return Status::InvalidArgument("engine: max_concurrent_requests must be positive");
  }
  const ModelSpec& spec = model->spec();
  const int64_t bs = options.block_size;
  const int64_t model_ctx = spec.max_position_embeddings > 0 ? spec.max_position_embeddings : 0;
  int64_t context = options.max_context > 0 ? options.max_context : model_ctx;
  if (model_ctx > 0) context = std::min(context, model_ctx);
  int64_t blocks = options.kv_blocks, max_blocks = options.kv_blocks, floor = options.kv_blocks;
  if (blocks <= 0) {
    // Room for every running request at full context (address space only:
    // memory comes as blocks are used), within the byte cap.
    const uint64_t block_bytes =
        2 * static_cast<uint64_t>(spec.n_layers * spec.kv_dim() * bs) * DTypeSize(options.kv_dtype);
    const int64_t per_seq = ((context > 0 ? context : 8192) + bs - 1) / bs;
    max_blocks = per_seq * options.max_concurrent_requests;
    if (options.kv_max_bytes > 0) {
      max_blocks = std::min<int64_t>(max_blocks, static_cast<int64_t>(options.kv_max_bytes / std::max<uint64_t>(block_bytes, 1)));
    }
    max_blocks = std::clamp<int64_t>(max_blocks, 1, int64_t{1} << 30);
    floor = std::clamp<int64_t>((options.kv_floor_tokens + bs - 1) / bs, 1, max_blocks);
    blocks = floor;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, model->CreateKvCache(blocks, bs, options.kv_dtype, max_blocks));
  ASSIGN_OR_RETURN(Sha256Digest fingerprint, SampledModelFingerprint(*model, bs));
  std::shared_ptr<WeightsIdentityHandle> identity = options.weights_identity;
  if (options.block_store && options.prefix_caching && !identity && IsRandomModelSpec(model->path())) {
    ASSIGN_OR_RETURN(RandomModelParts r, OpenRandomModel(model->path(), nullptr));
    identity = WeightsIdentityHandle::Ready(r.identity);
  } else if (options.block_store && options.prefix_caching && !identity) {
    ASSIGN_OR_RETURN(WeightFiles files, ListWeightFiles(model->path()));
    ASSIGN_OR_RETURN(std::vector<Sha256Digest> digests, DigestFiles(files.files, 4));
    identity = WeightsIdentityHandle::Ready(FullWeightsIdentity(files, digests));
  }
  SchedulerOptions so;
  so.max_running = options.max_concurrent_requests;
  so.prefill_chunk_tokens = options.prefill_chunk_tokens;
  so.sample_pool = options.sample_pool;
  so.max_context = context;
  so.prefix_caching = options.prefix_caching;
  so.block_store = options.block_store;
  so.model_id = options.model_id;
  so.kv_budget = options.kv_budget;
  so.kv_floor_blocks = cache->allocator().total_blocks();  // the floor, rounded up to a chunk
  // Grow by the floor's size at a time (~1K tokens): few claims, little excess.
  so.kv_grow_blocks = std::max<int64_t>(floor, 1);
  so.kv_wait_seconds = options.kv_wait_seconds;
  if (identity) {
    so.store_fingerprint = [identity, layout = LayoutOf(*model, bs, options.kv_dtype)]() {
      PrefixCache::StoreFingerprint f;
      f.never = identity->state() == WeightsIdentityHandle::State::kFailed;
      if (std::optional<Sha256Digest> w = identity->Get()) f.fingerprint = ModelFingerprint(*w, layout);
      return f;
    };
  }
  so.eos_token_ids = options.eos_token_ids ? *options.eos_token_ids : EosTokenIds(*model, tokenizer);
  auto sched = std::make_unique<Scheduler>(std::make_unique<ModelStep>(model), std::move(cache),
                                           fingerprint, tokenizer, std::move(so));
  const int max_queue = options.max_queue >= 0 ? options.max_queue
                                               : std::max(4 * options.max_concurrent_requests, 32);
  std::unique_ptr<Engine> e = Start(std::move(sched), max_queue);
  e->idle_release_s_ = options.kv_idle_release_s;
  return e;
}

std::unique_ptr<Engine> Engine::Start(std::unique_ptr<Scheduler> scheduler, int max_queue) {
  return std::unique_ptr<Engine>(new Engine(std::move(scheduler), max_queue));
}

Engine::Engine(std::unique_ptr<Scheduler> scheduler, int max_queue)
    : sched_(std::move(scheduler)),
      context_(sched_->context_length()),
      vocab_(sched_->vocab_size()),
      max_queue_(std::max(max_queue, 0)) {
  stats_.context_length = context_;
  stats_.kv_cache_bytes = sched_->cache().bytes();
  stats_.kv_max_bytes = sched_->cache().max_bytes();
  stats_.kv_dtype = sched_->cache().dtype();
  stats_.kv = sched_->kv_stats();
  sched_->set_on_restore_done([this] {
    {
      std::lock_guard<std::mutex> lk(mu_);
      restore_done_ = true;
    }
    wake_.notify_one();
  });
  thread_ = std::thread([this] { Run(); });
}

Engine::~Engine() {
  Shutdown();
  sched_.reset();  // joins restore threads, whose hook uses mu_ and wake_
}

void Engine::Shutdown() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  std::lock_guard<std::mutex> join_lk(join_mu_);
  if (thread_.joinable()) thread_.join();
}

Result<uint64_t> Engine::Submit(GenerationRequest request) {
  RETURN_IF_ERROR(sched_->Validate(request));  // immutable state only
  uint64_t id;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_) return Status::ResourceExhausted("engine: shutting down");
    const int64_t queued = sched_waiting_ + static_cast<int64_t>(inbox_.size());
    if (queued >= max_queue_) {
      ++stats_.rejected;
      return Status::ResourceExhausted("engine: the queue is full (" + std::to_string(queued) +
                                       " requests waiting); retry later");
    }
    id = next_id_++;
    inbox_.push_back(Submitted{id, std::move(request), std::chrono::steady_clock::now()});
    ++stats_.submitted;
  }
  wake_.notify_one();
  return id;
}

void Engine::Cancel(uint64_t id) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_) return;
    cancels_.push_back(id);
  }
  wake_.notify_one();
}

EngineStats Engine::Stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  EngineStats s = stats_;
  s.waiting = sched_waiting_ + static_cast<int64_t>(inbox_.size());
  return s;
}

EngineStats Engine::WaitIdle() const {
  std::unique_lock<std::mutex> lk(mu_);
  idle_.wait(lk, [this] {
    return inbox_.empty() && cancels_.empty() && !busy_ && sched_waiting_ == 0 && stats_.running == 0 &&
           stats_.kv_saves_in_flight == 0;
  });
  EngineStats s = stats_;
  s.waiting = 0;
  return s;
}

LiveRequests Engine::Live() const {
  LiveRequests r;
  std::lock_guard<std::mutex> lk(mu_);
  r.requests.reserve(std::min(live_.size() + inbox_.size(), kMaxLiveRequests));
  r.requests.assign(live_.begin(), live_.end());
  r.total = live_total_ + static_cast<int64_t>(inbox_.size());
  // Submitted since the last step: queued, nothing done yet.
  for (const Submitted& s : inbox_) {
    if (r.requests.size() >= kMaxLiveRequests) break;
    LiveRequest& e = r.requests.emplace_back();
    e.id = s.id;
    e.request_id = s.request.request_id;
    e.prompt_tokens = static_cast<int64_t>(s.request.prompt.size());
    e.arrived = s.arrived;
  }
  return r;
}

void Engine::ReleaseKvMemory() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    release_kv_ = true;
  }
  wake_.notify_one();
}

void Engine::Snapshot() {
  stats_.kv_cache_bytes = sched_->cache().bytes();
  stats_.running = sched_->running();
  sched_waiting_ = sched_->waiting();
  stats_.waiting = sched_waiting_;
  stats_.counters = sched_->counters();
  stats_.kv = sched_->kv_stats();
  stats_.kv_saves_in_flight = sched_->saves_in_flight();
  live_total_ = sched_->CollectLive(&live_, kMaxLiveRequests);
}

void Engine::Run() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    // A stalled scheduler (waiting for KV memory) counts as having no work:
    // the loop looks again every 50 ms instead of spinning. So does one
    // waiting only for restores: their threads wake it when done.
    auto has_work = [this] {
      return stop_ || release_kv_ || restore_done_ || !inbox_.empty() || !cancels_.empty() ||
             (sched_->HasWork() && !sched_->stalled() && !sched_->waiting_on_restores());
    };
    const bool above_floor = sched_->kv_above_floor() && !sched_->HasWork();
    std::chrono::milliseconds poll{0};
    if (sched_->stalled()) {
      poll = std::chrono::milliseconds(50);
    } else if (sched_->store_pending()) {
      poll = std::chrono::milliseconds(200);  // the weights are being hashed: save what was indexed once known
    } else if (above_floor && idle_release_s_ > 0) {
      poll = std::chrono::milliseconds(static_cast<int64_t>(idle_release_s_ * 1000));
    }
    if (poll.count() > 0) {
      if (!wake_.wait_for(lk, poll, has_work) && !sched_->HasWork()) {
        lk.unlock();
        sched_->PollStore();
        if (!sched_->store_pending() && above_floor) sched_->ReleaseKv();  // idle that long: memory back
        lk.lock();
        Snapshot();
        idle_.notify_all();
        continue;
      }
      // Work, or a stalled request to try again: on to the step.
    } else {
      wake_.wait(lk, has_work);
    }
    if (release_kv_) {
      release_kv_ = false;
      lk.unlock();
      sched_->ReleaseKv();
      lk.lock();
      Snapshot();
    }
    std::vector<Submitted> inbox;
    inbox.swap(inbox_);
    restore_done_ = false;
    std::vector<uint64_t> cancels;
    cancels.swap(cancels_);
    sched_waiting_ += static_cast<int64_t>(inbox.size());  // still queued, for Submit's cap
    const bool stopping = stop_;
    busy_ = true;
    lk.unlock();
    // Callbacks run here, without mu_: they may Submit or Cancel.
    for (Submitted& s : inbox) sched_->Enqueue(s.id, std::move(s.request), s.arrived);
    for (uint64_t id : cancels) sched_->Cancel(id);
    if (stopping) {
      sched_->PollStore();  // blocks indexed before the weights' hash was known
      sched_->AbortAll();
    } else {
      sched_->Admit();
      {
        std::lock_guard<std::mutex> relock(mu_);
        Snapshot();  // the queue as it stands while the step runs
      }
      sched_->Step();
    }
    lk.lock();
    busy_ = false;
    Snapshot();
    idle_.notify_all();
    if (stopping) return;
  }
}

}  // namespace llmhost
