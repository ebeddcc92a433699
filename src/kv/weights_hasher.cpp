#include "kv/weights_hasher.h"

#include <algorithm>

#include "util/log.h"

namespace llmhost {

std::optional<Sha256Digest> WeightsIdentityHandle::Get() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != State::kReady) return std::nullopt;
  return identity_;
}

WeightsIdentityHandle::State WeightsIdentityHandle::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

std::string WeightsIdentityHandle::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

double WeightsIdentityHandle::seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seconds_;
}

bool WeightsIdentityHandle::Wait(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return state_ != State::kHashing; });
}

std::shared_ptr<WeightsIdentityHandle> WeightsIdentityHandle::Ready(const Sha256Digest& identity) {
  auto h = std::make_shared<WeightsIdentityHandle>();
  h->from_cache_ = true;
  h->Finish(identity, 0);
  return h;
}

void WeightsIdentityHandle::Finish(Result<Sha256Digest> r, double seconds) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    seconds_ = seconds;
    if (r.ok()) {
      identity_ = *r;
      state_ = State::kReady;
    } else {
      error_ = r.status().message();
      state_ = State::kFailed;
    }
  }
  cv_.notify_all();
}

WeightsHasher::WeightsHasher(WeightsHasherOptions options)
    : options_(std::move(options)), cache_(options_.cache_path) {
  if (options_.threads <= 0) {
    options_.threads = static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 8));
  }
  thread_ = std::thread([this] { Run(); });
}

WeightsHasher::~WeightsHasher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cancel_ = true;
  cv_.notify_all();
  thread_.join();
  for (Job& j : queue_) j.handle->Finish(Status::ResourceExhausted("the server stopped before hashing"), 0);
}

std::shared_ptr<WeightsIdentityHandle> WeightsHasher::Identify(const std::string& model_path) {
  auto handle = std::make_shared<WeightsIdentityHandle>();
  Result<WeightFiles> files = ListWeightFiles(model_path);
  if (!files.ok()) {
    handle->Finish(files.status(), 0);
    return handle;
  }
  Job job{std::move(*files), {}, handle};
  std::vector<Sha256Digest> digests;
  bool all_known = true;
  for (const std::string& f : job.files.files) {
    Result<FileStamp> st = StampOf(f);
    if (!st.ok()) {
      handle->Finish(st.status(), 0);
      return handle;
    }
    handle->bytes_total_ += st->size;
    job.stamps.push_back(*st);
    std::optional<Sha256Digest> d = cache_.Lookup(*st);
    if (!d) all_known = false;
    if (all_known) digests.push_back(*d);
  }
  if (all_known) {
    handle->from_cache_ = true;
    handle->Finish(FullWeightsIdentity(job.files, digests), 0);
    return handle;
  }
  if (handle->bytes_total_ <= options_.inline_max_bytes) {
    HashJob(job, /*background=*/false);
    return handle;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) {
      handle->Finish(Status::ResourceExhausted("the server is stopping"), 0);
      return handle;
    }
    queue_.push_back(std::move(job));
  }
  cv_.notify_all();
  return handle;
}

void WeightsHasher::Run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    HashJob(job, /*background=*/true);
  }
}

void WeightsHasher::HashJob(Job& job, bool background) {
  const auto t0 = std::chrono::steady_clock::now();
  // Files remembered since the job was queued (another model sharing them) are not read again.
  std::vector<Sha256Digest> digests(job.files.files.size());
  std::vector<std::string> todo;
  std::vector<size_t> todo_index;
  for (size_t i = 0; i < job.files.files.size(); ++i) {
    if (std::optional<Sha256Digest> d = cache_.Lookup(job.stamps[i])) {
      digests[i] = *d;
    } else {
      todo.push_back(job.files.files[i]);
      todo_index.push_back(i);
    }
  }
  Result<std::vector<Sha256Digest>> got =
      DigestFiles(todo, options_.threads, background && options_.low_priority, &cancel_, &job.handle->progress_);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!got.ok()) {
    LOG_WARN("kv: cannot hash the weights (" << got.status().message()
                                             << "): this load's KV blocks are not saved to or restored from the cache");
    job.handle->Finish(got.status(), s);
    return;
  }
  for (size_t k = 0; k < todo.size(); ++k) {
    const size_t i = todo_index[k];
    digests[i] = (*got)[k];
    // The stamp taken when the job was queued: DigestFiles checked the file
    // did not change while it was read, but it may have changed before.
    Result<FileStamp> now = StampOf(todo[k]);
    if (!now.ok() || !(*now == job.stamps[i])) {
      job.handle->Finish(Status::IOError(todo[k] + ": the file changed after the model was loaded"), s);
      return;
    }
    cache_.Remember(todo[k], job.stamps[i], digests[i]);
  }
  LOG_INFO("kv: hashed " << (job.handle->bytes_total_ >> 20) << " MiB of weights in " << s << " s ("
                         << todo.size() << " files)");
  job.handle->Finish(FullWeightsIdentity(job.files, digests), s);
}

}  // namespace llmhost
