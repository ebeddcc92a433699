// Tokenizer throughput and scaling.
//
//   build/tokenizer_bench [--shared DIR] [--max-mb N] [--only tok_llama2.json] [--wall]
//
// Encode times are the encoding thread's CPU time (best of a few runs) unless
// --wall is given; load times are always elapsed time.
//
// For each tokenizer in ../shared/reference/tokenizers: encode MB/s on English
// text, then the time per MB for 1, 2, 4, 8 MB of (a) one repeated letter and
// (b) random bytes, and the ratio time-per-MB(8 MB) / time-per-MB(1 MB): a
// linear-time encoder stays near 1.0, a quadratic one grows ~8x.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "util/file.h"

using namespace llmhost;

namespace {

bool g_wall_clock = false;  // --wall: elapsed time instead of CPU time

// Encode runs on the calling thread, so its CPU time is the work done; on a
// shared machine elapsed time mostly measures the other processes.
double Now() {
  if (g_wall_clock) return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double SecondsToEncode(const Tokenizer& tok, const std::string& text, size_t* n_tokens) {
  double t0 = Now();
  std::vector<TokenId> ids = tok.Encode(text, false);
  double t1 = Now();
  if (n_tokens) *n_tokens = ids.size();
  return t1 - t0;
}

// Best of `reps` runs: the least disturbed by the other work on the machine.
double BestSeconds(const Tokenizer& tok, const std::string& text, int reps, size_t* n_tokens) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) best = std::min(best, SecondsToEncode(tok, text, n_tokens));
  return best;
}

std::string Repeat(const std::string& unit, size_t bytes) {
  std::string out;
  out.reserve(bytes + unit.size());
  while (out.size() < bytes) out += unit;
  out.resize(bytes);
  return out;
}

std::string RandomBytes(size_t bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(bytes, '\0');
  for (auto& c : out) c = static_cast<char>(rng() & 0xFF);
  return out;
}

// English prose: the spec pages of ../shared and the project's own docs.
std::string EnglishText(const std::string& shared) {
  std::string text;
  for (const char* f : {"/spec/README.md", "/spec/pool-and-memory.md", "/spec/cache-scheduler-api.md",
                        "/spec/peers.md", "/STYLE.md", "/README.md"}) {
    auto s = ReadFileToString(shared + f);
    if (s.ok()) text += *s + "\n";
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shared = std::string(LLMHOST_SOURCE_DIR) + "/../shared";
  size_t max_mb = 8;
  std::string only;  // run just this tokenizer file (e.g. tok_llama2.json)
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--wall")) g_wall_clock = true;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--shared")) shared = argv[i + 1];
    if (!std::strcmp(argv[i], "--max-mb")) max_mb = std::max<size_t>(1, std::strtoul(argv[i + 1], nullptr, 10));
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
  }
  const std::string english_unit = EnglishText(shared);
  if (english_unit.empty()) {
    std::fprintf(stderr, "tokenizer_bench: %s not found (pass --shared DIR)\n", shared.c_str());
    return 1;
  }
  const std::string english = Repeat(english_unit, 4 << 20);
  const char* names[] = {"tok_llama3.json", "tok_qwen3.json", "tok_llama2.json", "trained_wordpiece.json",
                         "trained_unigram.json"};
  const std::string sizes_label = "(1," + std::to_string(max_mb) + "MB) ratio";
  std::printf("%-24s %10s %12s %10s | %-34s | %-34s\n", "tokenizer", "load ms", "English MB/s", "tok/s",
              ("repeated letter s/MB " + sizes_label).c_str(), ("random bytes s/MB " + sizes_label).c_str());
  for (const char* name : names) {
    if (!only.empty() && only != name) continue;
    std::string path = shared + "/reference/tokenizers/" + name;
    auto t0 = std::chrono::steady_clock::now();
    auto tok = Tokenizer::FromPath(path);
    double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!tok.ok()) {
      std::printf("%-24s load failed: %s\n", name, tok.status().ToString().c_str());
      continue;
    }
    size_t n_tokens = 0;
    double s_en = BestSeconds(**tok, english, 3, &n_tokens);
    double mbps = english.size() / 1048576.0 / s_en;
    double tps = n_tokens / s_en;
    double per_mb_letter[2], per_mb_random[2];
    size_t sizes[2] = {1, max_mb};
    for (int k = 0; k < 2; ++k) {
      size_t bytes = sizes[k] << 20;
      per_mb_letter[k] = BestSeconds(**tok, std::string(bytes, 'a'), 3, nullptr) / sizes[k];
      per_mb_random[k] = BestSeconds(**tok, RandomBytes(bytes, 42), 3, nullptr) / sizes[k];
    }
    std::printf("%-24s %10.1f %12.2f %10.0f | %9.3f %9.3f %8.2f | %9.3f %9.3f %8.2f\n", name, load_ms, mbps, tps,
                per_mb_letter[0], per_mb_letter[1], per_mb_letter[1] / per_mb_letter[0], per_mb_random[0],
                per_mb_random[1], per_mb_random[1] / per_mb_random[0]);
    std::fflush(stdout);
  }
  return 0;
}
