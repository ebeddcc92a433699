// The SSD tier (kv/ssd_tier.h): startup scan, size cap, writer, reads.
#include "kv/ssd_tier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/log.h"

namespace fs = std::filesystem;

namespace llmhost {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr const char* kSuffix = ".safetensors";

struct FsSpace {
  uint64_t free = 0, size = 0;
  bool ok = false;
};

FsSpace SpaceOf(const std::string& dir) {
  struct statvfs v;
  FsSpace s;
  if (::statvfs(dir.c_str(), &v) != 0) return s;
  s.free = uint64_t{v.f_bavail} * v.f_frsize;
  s.size = uint64_t{v.f_blocks} * v.f_frsize;
  s.ok = true;
  return s;
}

}  // namespace

SsdTier::SsdTier(SsdTierOptions options, TierStatsBook* stats)
    : options_(std::move(options)), stats_(stats) {}

Result<std::unique_ptr<SsdTier>> SsdTier::Open(SsdTierOptions options, TierStatsBook* stats) {
  std::unique_ptr<SsdTier> t(new SsdTier(std::move(options), stats));
  RETURN_IF_ERROR(t->Scan());
  for (int i = 0; i < std::max(1, t->options_.writer_threads); ++i) {
    t->writers_.emplace_back([p = t.get()] { p->WriterLoop(); });
  }
  return t;
}

SsdTier::~SsdTier() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& w : writers_) w.join();
}

std::string SsdTier::PathOf(const BlockKey& key) const {
  std::string hex = ToHex(key);
  return options_.dir + "/" + hex.substr(0, 1) + "/" + hex + kSuffix;
}

Status SsdTier::Scan() {
  const std::string& dir = options_.dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    return Status::IOError("cache dir " + dir + ": cannot create: " + ec.message());
  }
  struct Found {
    BlockKey key;
    FileEntry entry;
    int64_t mtime_ns;
  };
  std::vector<Found> found;
  uint64_t temps = 0, bad = 0;
  for (int i = 0; i < 16; ++i) {
    std::string sub = dir + "/" + "0123456789abcdef"[i];
    fs::create_directories(sub, ec);
    if (ec) return Status::IOError("cache dir " + sub + ": cannot create: " + ec.message());
    fs::directory_iterator it(sub, ec), end;
    if (ec) return Status::IOError("cache dir " + sub + ": cannot read: " + ec.message());
    for (; it != end; it.increment(ec)) {
      if (ec) return Status::IOError("cache dir " + sub + ": cannot read: " + ec.message());
      std::string name = it->path().filename().string();
      std::string path = it->path().string();
      if (IsBlockTempFileName(name)) {  // a write cut short by a crash
        if (::unlink(path.c_str()) == 0) ++temps;
        continue;
      }
      BlockKey key;
      if (name.size() != 64 + std::string_view(kSuffix).size() ||
          name.substr(64) != kSuffix || !ParseHexDigest(name.substr(0, 64), &key) ||
          ToHex(key).substr(0, 1) != sub.substr(sub.size() - 1)) {
        continue;  // not ours: leave it alone
      }
      BlockFileHeader h;
      uint64_t bytes = 0;
      int64_t mtime = 0;
      Status s = ReadBlockFileHeader(path, &h, &bytes, &mtime);
      if (s.ok() && h.meta.key != key) s = Status::Corruption(path + ": header names another key");
      if (!s.ok()) {
        LOG_WARN("kv cache: deleting unreadable block file: " << s.ToString());
        ::unlink(path.c_str());
        stats_->Add("", &TierStats::errors);  // the header may be unreadable: "(unknown)"
        ++bad;
        continue;
      }
      FileEntry e;
      e.bytes = bytes;
      e.model = h.meta.model;
      e.fingerprint = h.meta.fingerprint;
      found.push_back({key, std::move(e), mtime});
    }
  }
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.mtime_ns < b.mtime_ns; });
  FsSpace space = SpaceOf(dir);
  std::lock_guard<std::mutex> lock(mu_);
  for (Found& f : found) InsertIndexLocked(f.key, std::move(f.entry), /*most_recent=*/true);
  configured_max_ = options_.auto_size ? (space.free + total_bytes_) / 2 : options_.max_bytes;
  effective_max_ = configured_max_;
  if (space.ok) {
    uint64_t reserve = std::min(space.size / 20, 5 * kGiB);
    uint64_t room = total_bytes_ + space.free;
    effective_max_ = std::min(configured_max_, room > reserve ? room - reserve : 0);
  }
  EvictForLocked(0, effective_max_);
  LOG_INFO("kv cache: " << dir << ": " << index_.size() << " block files, " << total_bytes_
                        << " bytes (cap " << configured_max_ << ", effective " << effective_max_
                        << "); removed " << temps << " temp and " << bad << " unreadable files");
  // Said once at start rather than by every failed write.
  const std::string probe = dir + "/.llmhost-write-probe-" + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    writable_ = false;
    LOG_WARN("kv cache: " << dir << " is not writable (" << std::strerror(errno) << "): the " << index_.size()
                          << " blocks it holds are served, but no new block will be saved to disk; make it "
                             "writable or choose another --cache-dir");
  } else {
    ::close(fd);
    ::unlink(probe.c_str());
  }
  return Status::OK();
}

void SsdTier::InsertIndexLocked(const BlockKey& key, FileEntry entry, bool most_recent) {
  if (index_.count(key)) EraseFileLocked(key, /*eviction=*/false);  // should not happen
  entry.seq = next_seq_++;
  entry.lru = most_recent ? lru_.insert(lru_.end(), key) : lru_.insert(lru_.begin(), key);
  total_bytes_ += entry.bytes;
  stats_->Add(entry.model, &TierStats::ssd_bytes, static_cast<int64_t>(entry.bytes));
  stats_->Add(entry.model, &TierStats::ssd_files, 1);
  index_.emplace(key, std::move(entry));
}

// Removes the index entry and its file (unlink is metadata-only: done under
// mu_ so that a rewrite of the same key cannot interleave).
void SsdTier::EraseFileLocked(const BlockKey& key, bool eviction) {
  auto it = index_.find(key);
  if (it == index_.end()) return;
  FileEntry& e = it->second;
  std::string path = PathOf(key);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    LOG_WARN("kv cache: cannot delete " << path << ": " << std::strerror(errno));
    stats_->Add(e.model, &TierStats::errors);
  }
  total_bytes_ -= e.bytes;
  stats_->Add(e.model, &TierStats::ssd_bytes, -static_cast<int64_t>(e.bytes));
  stats_->Add(e.model, &TierStats::ssd_files, -1);
  if (eviction) stats_->Add(e.model, &TierStats::ssd_evictions);
  lru_.erase(e.lru);
  index_.erase(it);
}

void SsdTier::EvictForLocked(uint64_t incoming, uint64_t cap) {
  if (total_bytes_ + reserved_bytes_ + incoming <= cap) return;
  // Batch: make room down to 90% of the cap so that the next saves need none.
  uint64_t target = cap / 10 * 9;
  if (target < incoming) target = cap;
  target -= incoming;
  auto over = [&] { return total_bytes_ + reserved_bytes_ > target; };
  // Blocks of fingerprints nobody used since start go first (a changed
  // model's stale blocks), oldest first; then everything in LRU order.
  for (auto it = lru_.begin(); it != lru_.end() && over();) {
    const BlockKey key = *it++;
    if (!used_fingerprints_.count(index_.at(key).fingerprint)) EraseFileLocked(key, true);
  }
  while (over() && !lru_.empty()) EraseFileLocked(lru_.front(), true);
}

uint64_t SsdTier::FreeSpaceCap() const {
  FsSpace s = SpaceOf(options_.dir);
  if (!s.ok) return UINT64_MAX;
  uint64_t reserve = std::min(s.size / 20, 5 * kGiB);
  uint64_t existing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    existing = total_bytes_ + reserved_bytes_;
  }
  uint64_t room = existing + s.free;
  return room > reserve ? room - reserve : 0;
}

bool SsdTier::AddPending(const BlockMeta& meta, BlockBytes data) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.count(meta.key)) return false;
    auto it = index_.find(meta.key);
    if (it == index_.end()) {
      uint64_t size = data->size();
      pending_.emplace(meta.key, Pending{meta, std::move(data)});
      pending_bytes_ += size;
      stats_->Add(meta.model, &TierStats::pending_bytes, static_cast<int64_t>(size));
      stats_->Add(meta.model, &TierStats::pending_blocks, 1);
      return true;
    }
  }
  Touch(meta.key);
  return false;
}

void SsdTier::Submit(const BlockKey& key) {
  std::unique_lock<std::mutex> lock(mu_);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(options_.inline_after_s));
  changed_cv_.wait_until(lock, deadline, [&] { return queue_.size() < options_.queue_blocks; });
  auto it = pending_.find(key);
  if (it == pending_.end() || it->second.state != Pending::kWaiting) return;  // cleared
  if (queue_.size() < options_.queue_blocks) {
    it->second.state = Pending::kQueued;
    queue_.push_back(key);
    work_cv_.notify_one();
    return;
  }
  it->second.state = Pending::kWriting;
  stats_->Add(it->second.meta.model, &TierStats::inline_writes);
  lock.unlock();
  WriteOne(key);
}

void SsdTier::WriterLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and drained
    BlockKey key = queue_.front();
    queue_.pop_front();
    pending_.at(key).state = Pending::kWriting;
    changed_cv_.notify_all();
    lock.unlock();
    WriteOne(key);
    lock.lock();
  }
}

// Writes a pending block in state kWriting; no lock held on entry.
void SsdTier::WriteOne(const BlockKey& key) {
  BlockMeta meta;
  BlockBytes data;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Pending& p = pending_.at(key);
    meta = p.meta;
    data = p.data;
  }
  if (options_.before_write) options_.before_write(key);
  std::string head = BlockFileHeaderFor(meta, *data);
  uint64_t size = head.size() + data->size();
  uint64_t free_cap = FreeSpaceCap();
  std::string path = PathOf(key);
  bool write = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    effective_max_ = std::min(configured_max_, free_cap);
    if (pending_.at(key).cancelled) {
      // Clear() ran: nothing to write.
    } else if (size > effective_max_) {
      LOG_WARN("kv cache: block of " << size << " bytes exceeds the SSD cap of " << effective_max_
                                     << " bytes: not stored");
      stats_->Add(meta.model, &TierStats::errors);
    } else {
      EvictForLocked(size, effective_max_);
      reserved_bytes_ += size;
      write = true;
    }
  }
  Status s;
  if (write) {
    s = WriteBlockFileAtomic(path, head, *data);
    if (!s.ok()) LOG_WARN("kv cache: block write failed: " << s.ToString());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (write) {
    reserved_bytes_ -= size;
    if (!s.ok()) {
      stats_->Add(meta.model, &TierStats::errors);
    } else if (pending_.at(key).cancelled) {
      ::unlink(path.c_str());  // cleared while it was written
    } else {
      FileEntry e;
      e.bytes = size;
      e.model = meta.model;
      e.fingerprint = meta.fingerprint;
      InsertIndexLocked(key, std::move(e), /*most_recent=*/true);
      stats_->Add(meta.model, &TierStats::ssd_writes);
    }
  }
  ErasePendingLocked(key);
  changed_cv_.notify_all();
}

void SsdTier::ErasePendingLocked(const BlockKey& key) {
  auto it = pending_.find(key);
  if (it == pending_.end()) return;
  uint64_t size = it->second.data->size();
  pending_bytes_ -= size;
  stats_->Add(it->second.meta.model, &TierStats::pending_bytes, -static_cast<int64_t>(size));
  stats_->Add(it->second.meta.model, &TierStats::pending_blocks, -1);
  pending_.erase(it);
}

bool SsdTier::Contains(const BlockKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.count(key) || pending_.count(key);
}

bool SsdTier::Indexed(const BlockKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.count(key) != 0;
}

void SsdTier::Touch(const BlockKey& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return;
    lru_.splice(lru_.end(), lru_, it->second.lru);
  }
  ::utimensat(AT_FDCWD, PathOf(key).c_str(), nullptr, 0);  // LRU order across restarts
}

BlockBytes SsdTier::FindPending(const BlockMeta& want) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(want.key);
  if (it == pending_.end() || !it->second.meta.SameShape(want)) return nullptr;
  return it->second.data;
}

BlockBytes SsdTier::Read(const BlockMeta& want) {
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(want.key);
    if (it == index_.end()) return nullptr;
    seq = it->second.seq;
  }
  Result<BlockBytes> r = ReadBlockFile(PathOf(want.key), want);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(want.key);
  bool same = it != index_.end() && it->second.seq == seq;
  if (r.ok()) {
    if (same) lru_.splice(lru_.end(), lru_, it->second.lru);
    return std::move(r).value();
  }
  // Removed or rewritten while it was read (a clear, an eviction, a newer
  // save of the key): a miss, not a damaged file.
  if (!same) return nullptr;
  LOG_WARN("kv cache: dropping block file: " << r.status().ToString());
  stats_->Add(it->second.model, &TierStats::errors);
  EraseFileLocked(want.key, /*eviction=*/false);
  return nullptr;
}

void SsdTier::NoteFingerprint(const Sha256Digest& fingerprint) {
  std::lock_guard<std::mutex> lock(mu_);
  used_fingerprints_.insert(fingerprint);
}

size_t SsdTier::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_cv_.wait_until(lock, deadline, [&] { return pending_.empty(); });
  return pending_.size();
}

uint64_t SsdTier::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t files = index_.size();
  while (!lru_.empty()) EraseFileLocked(lru_.front(), /*eviction=*/false);
  queue_.clear();
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto next = std::next(it);
    if (it->second.state == Pending::kWriting) it->second.cancelled = true;
    else ErasePendingLocked(it->first);
    it = next;
  }
  changed_cv_.notify_all();
  return files;
}

uint64_t SsdTier::pending_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_bytes_;
}

uint64_t SsdTier::effective_max_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return effective_max_;
}

uint64_t SsdTier::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_bytes_;
}

}  // namespace llmhost
