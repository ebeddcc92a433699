// What the full weights identity (every byte hashed, kv/weights_digest.h)
// costs a model load, on a file of --gib GiB (default 16: a 8B model in bf16)
// of pseudo-random bytes written once under --dir:
//
//   sampled   the old identity: name, size and 16 windows of 64 KiB
//   read      pread of the whole file on T threads, no hashing (the disk's or
//             the page cache's rate: what hashing can reach at best)
//   hash      DigestFiles on T threads; "cold" after the file's pages were
//             dropped from the page cache (fdatasync + POSIX_FADV_DONTNEED),
//             "warm" when it fits in RAM twice over and was just read
//   load      WeightsHasher::Identify: the time it blocks a load (a stat per
//             file and a lookup), the time until the identity is ready (the
//             background hashing at nice 19, default threads), and a second
//             hasher on the same digest file (a restart): ready on return
//
// Usage: weights_hash_bench [--gib N] [--dir DIR] [--threads 1,2,4,8] [--keep]
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "kv/fingerprint.h"
#include "kv/weights_digest.h"
#include "kv/weights_hasher.h"
#include "util/file.h"

namespace {

using llmhost::bench::Now;

void DropCache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

bool WriteFile(const std::string& path, uint64_t bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) == bytes) return true;  // reused
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  std::vector<uint64_t> buf((64u << 20) / 8);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (uint64_t done = 0; done < bytes;) {
    for (uint64_t& v : buf) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      v = x;
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size() * 8, bytes - done));
    if (::write(fd, buf.data(), n) != static_cast<ssize_t>(n)) {
      ::close(fd);
      return false;
    }
    done += n;
  }
  ::fdatasync(fd);
  ::close(fd);
  return true;
}

// Seconds to pread the whole file on `threads` threads, 4 MiB at a time.
double ReadAll(const std::string& path, uint64_t size, int threads) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  std::atomic<uint64_t> next{0};
  const uint64_t piece = 4u << 20;
  const double t0 = Now();
  auto work = [&] {
    std::vector<char> buf(piece);
    for (uint64_t off; (off = next.fetch_add(piece)) < size;) {
      if (::pread(fd, buf.data(), piece, static_cast<off_t>(off)) < 0) break;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  ::close(fd);
  return Now() - t0;
}

uint64_t MemTotal() {
  FILE* f = std::fopen("/proc/meminfo", "r");
  unsigned long long kb = 0;
  if (f) {
    if (std::fscanf(f, "MemTotal: %llu kB", &kb) != 1) kb = 0;
    std::fclose(f);
  }
  return kb * 1024;
}

}  // namespace

int main(int argc, char** argv) {
  double gib = 16;
  std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  std::vector<int> threads = {1, 2, 4, 8};
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gib" && i + 1 < argc) {
      gib = std::atof(argv[++i]);
    } else if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--threads" && i + 1 < argc) {
      threads.clear();
      for (std::string s = argv[++i]; !s.empty();) {
        const size_t c = s.find(',');
        threads.push_back(std::atoi(s.substr(0, c).c_str()));
        s = c == std::string::npos ? "" : s.substr(c + 1);
      }
    } else if (a == "--keep") {
      keep = true;
    } else {
      std::fprintf(stderr, "usage: weights_hash_bench [--gib N] [--dir DIR] [--threads 1,2,4] [--keep]\n");
      return 2;
    }
  }
  const std::string model = dir + "/llmhost-hash-bench";
  std::filesystem::create_directories(model);
  const std::string file = model + "/model.safetensors";
  const uint64_t size = static_cast<uint64_t>(gib * double(1ull << 30));
  std::printf("weights_hash_bench: %.1f GiB at %s, %u hardware threads, %.1f GiB RAM\n", gib, file.c_str(),
              std::thread::hardware_concurrency(), double(MemTotal()) / double(1ull << 30));
  double t0 = Now();
  if (!WriteFile(file, size)) {
    std::fprintf(stderr, "cannot write %s\n", file.c_str());
    return 1;
  }
  std::printf("file ready in %.1f s\n", Now() - t0);
  const double gb = double(size) / 1e9;

  DropCache(file);
  t0 = Now();
  auto sampled = llmhost::SampledWeightsIdentity(model);
  std::printf("sampled identity (16 windows, cold): %.2f ms\n", (Now() - t0) * 1e3);
  if (!sampled.ok()) return 1;

  const bool warm_fits = size * 2 < MemTotal();
  std::printf("\n| threads | read cold GB/s | hash cold GB/s | cold hash s | read warm GB/s | hash warm GB/s | hash/read cold |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (int t : threads) {
    DropCache(file);
    const double rc = ReadAll(file, size, t);
    DropCache(file);
    t0 = Now();
    auto d = llmhost::DigestFiles({file}, t);
    const double hc = Now() - t0;
    if (!d.ok()) {
      std::fprintf(stderr, "%s\n", d.status().ToString().c_str());
      return 1;
    }
    double rw = 0, hw = 0;
    if (warm_fits) {
      ReadAll(file, size, t);  // into the page cache
      rw = ReadAll(file, size, t);
      t0 = Now();
      auto w = llmhost::DigestFiles({file}, t);
      hw = Now() - t0;
      if (!w.ok() || (*w)[0] != (*d)[0]) {
        std::fprintf(stderr, "digest differs between runs\n");
        return 1;
      }
    }
    std::printf("| %d | %.2f | %.2f | %.2f | %s | %s | %.2f |\n", t, gb / rc, gb / hc, hc,
                warm_fits ? std::to_string(gb / rw).substr(0, 5).c_str() : "-",
                warm_fits ? std::to_string(gb / hw).substr(0, 5).c_str() : "-", rc / hc);
  }

  // The load path: what Identify blocks, and when the identity is ready.
  const std::string db = model + "/weights_digests.json";
  std::filesystem::remove(db);
  DropCache(file);
  double blocked = 0, ready = 0, restart_us = 0;
  {
    llmhost::WeightsHasherOptions o;
    o.cache_path = db;
    llmhost::WeightsHasher hasher(o);
    t0 = Now();
    auto h = hasher.Identify(model);
    blocked = Now() - t0;
    h->Wait(std::chrono::hours(1));
    ready = Now() - t0;
    if (!h->Get()) {
      std::fprintf(stderr, "hashing failed: %s\n", h->error().c_str());
      return 1;
    }
  }
  {
    llmhost::WeightsHasherOptions o;
    o.cache_path = db;
    llmhost::WeightsHasher hasher(o);
    t0 = Now();
    auto h = hasher.Identify(model);
    restart_us = (Now() - t0) * 1e6;
    if (h->state() != llmhost::WeightsIdentityHandle::State::kReady) {
      std::fprintf(stderr, "a remembered file was not ready at once\n");
      return 1;
    }
  }
  std::printf("\nload: Identify blocked %.3f ms; identity ready after %.2f s (cold, background, default threads, "
              "nice 19) = %.2f GB/s; after a restart: ready on return in %.0f us\n",
              blocked * 1e3, ready, gb / ready, restart_us);
  if (!keep) std::filesystem::remove_all(model);
  return 0;
}
