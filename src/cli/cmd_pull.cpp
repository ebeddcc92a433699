// `llmhost pull ORG/NAME[@REVISION][:QUANT] [--model-dir DIR] [--include GLOB]...
// [--exclude GLOB]...`: downloads a model from the Hugging Face Hub into the
// first model directory (as `llmhost serve` resolves --model-dir: flag,
// LLMHOST_MODEL_DIR, <home>/settings.json, <home>/models) in the Hugging Face
// cache layout (pool/hub_pull.h). HF_ENDPOINT and HF_TOKEN are honoured.
// Progress goes to stderr: a bar on a terminal, plain lines otherwise.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/commands.h"
#include "pool/hub_pull.h"
#include "server/serve_settings.h"

namespace llmhost::cli {

namespace {

struct PullCliOptions {
  std::string model;
  std::string home;
  std::vector<std::string> model_dirs, include, exclude;
  int retries = 3;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "llmhost: pull: %s\n", message.c_str());
  return 1;
}

// "512 B", "3.4 KiB", "1.2 GiB".
std::string Bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return buf;
}

// Shows HubPullProgress on stderr: one bar redrawn in place on a terminal
// (at most 10 times a second), else a line per file start, quarter and end.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool terminal) : terminal_(terminal) {}

  void operator()(const HubPullProgress& p) {
    using E = HubPullProgress::Event;
    const auto now = std::chrono::steady_clock::now();
    switch (p.event) {
      case E::kListed:
        std::fprintf(stderr, "pull: %zu files, %s\n", p.file_count, Bytes(p.total).c_str());
        return;
      case E::kFileCached:
        std::fprintf(stderr, "pull: [%zu/%zu] %s: already downloaded\n", p.file_index + 1, p.file_count,
                     p.file.c_str());
        return;
      case E::kRetry:
        EndBar();
        std::fprintf(stderr, "pull: %s: %s; retrying\n", p.file.c_str(), p.message.c_str());
        return;
      case E::kFileStart:
        start_ = now;
        start_bytes_ = p.file_done;
        quarter_ = 0;
        if (!terminal_) {
          std::fprintf(stderr, "pull: [%zu/%zu] %s: %s%s\n", p.file_index + 1, p.file_count, p.file.c_str(),
                       Bytes(p.file_total).c_str(), p.file_done > 0 ? (", resuming at " + Bytes(p.file_done)).c_str() : "");
        }
        return;
      case E::kFileBytes:
        if (terminal_) {
          if (now - last_draw_ < std::chrono::milliseconds(100)) return;
          last_draw_ = now;
          DrawBar(p, now);
        } else if (p.file_total > 0) {
          int q = static_cast<int>(4 * p.file_done / p.file_total);
          if (q > quarter_ && q < 4) {
            quarter_ = q;
            std::fprintf(stderr, "pull: %s: %d%%\n", p.file.c_str(), 25 * q);
          }
        }
        return;
      case E::kFileDone:
        if (terminal_) {
          DrawBar(p, now);
          EndBar();
        } else {
          std::fprintf(stderr, "pull: %s: done\n", p.file.c_str());
        }
        return;
    }
  }

 private:
  void DrawBar(const HubPullProgress& p, std::chrono::steady_clock::time_point now) {
    constexpr int kWidth = 30;
    const double frac = p.file_total > 0 ? static_cast<double>(p.file_done) / p.file_total : 0;
    const int fill = static_cast<int>(frac * kWidth);
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = secs > 0 ? (p.file_done - start_bytes_) / secs / 1048576.0 : 0;
    std::string bar(fill, '#');
    bar.resize(kWidth, '-');
    std::fprintf(stderr, "\r[%zu/%zu] %-40.40s [%s] %3d%% %s / %s %.1f MiB/s \033[K", p.file_index + 1,
                 p.file_count, p.file.c_str(), bar.c_str(), static_cast<int>(frac * 100),
                 Bytes(p.file_done).c_str(), Bytes(p.file_total).c_str(), rate);
    drawn_ = true;
  }

  void EndBar() {
    if (drawn_) std::fputc('\n', stderr);
    drawn_ = false;
  }

  bool terminal_;
  bool drawn_ = false;
  int quarter_ = 0;
  uint64_t start_bytes_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

int RunPull(const PullCliOptions& opt) {
  auto ref = ParseHubRef(opt.model);
  if (!ref.ok()) return Fail(ref.status().message());
  // The model directory as `serve` resolves it.
  server::SettingValues values;
  if (!opt.home.empty()) values["home"] = {opt.home};
  if (!opt.model_dirs.empty()) values["model-dir"] = opt.model_dirs;
  auto settings = server::ResolveServeSettings(values, [](const char* name) { return std::getenv(name); });
  if (!settings.ok()) return Fail(settings.status().message());

  HubPullOptions o;
  o.model_dir = settings->model_dirs.front();
  o.ref = std::move(ref).value();
  o.filter.include = opt.include;
  o.filter.exclude = opt.exclude;
  o.retries = opt.retries;
  if (const char* e = std::getenv("HF_ENDPOINT"); e != nullptr && *e != '\0') o.endpoint = e;
  if (const char* t = std::getenv("HF_TOKEN"); t != nullptr && *t != '\0') o.token = t;
  auto printer = std::make_shared<ProgressPrinter>(isatty(STDERR_FILENO) == 1);
  o.progress = [printer](const HubPullProgress& p) { (*printer)(p); };

  std::fprintf(stderr, "pull: %s@%s from %s into %s\n", o.ref.repo.c_str(), o.ref.revision.c_str(),
               o.endpoint.c_str(), o.model_dir.c_str());
  auto r = PullFromHub(o);
  if (!r.ok()) return Fail(r.status().message());
  std::printf("pulled %s (commit %s): %zu files, %s downloaded, in %s\n", r->model_id.c_str(), r->commit.c_str(),
              r->files, Bytes(r->downloaded_bytes).c_str(), r->snapshot_dir.c_str());
  return 0;
}

}  // namespace

void RegisterPullCommands(CLI::App& app) {
  auto opt = std::make_shared<PullCliOptions>();
  CLI::App* cmd = app.add_subcommand("pull", "Download a model from the Hugging Face Hub into the model directory");
  cmd->add_option("model", opt->model, "ORG/NAME, ORG/NAME@REVISION, or ORG/NAME:QUANT (one GGUF file, e.g. :Q4_K_M)")
      ->required();
  cmd->add_option("--model-dir", opt->model_dirs,
                  "model directory (as for serve; the first one is used; default <home>/models)");
  cmd->add_option("--home", opt->home, "llmhost's home: settings.json, default model dir (default ~/.llmhost)");
  cmd->add_option("--include", opt->include,
                  "glob of files to download (repeatable; replaces the default: weights, configs, tokenizer, "
                  "chat templates)");
  cmd->add_option("--exclude", opt->exclude, "glob of files to skip (repeatable)");
  cmd->add_option("--retries", opt->retries, "more attempts per file after a network error (default 3)")
      ->check(CLI::Range(0, 100));
  cmd->footer(
      "Files go to <model-dir>/models--ORG--NAME/ in the Hugging Face cache layout (blobs/, snapshots/<commit>/,\n"
      "refs/<revision>), shared with huggingface_hub; `llmhost serve` lists the model as ORG/NAME.\n"
      "An interrupted download resumes on the next pull. Environment: HF_ENDPOINT (default\n"
      "https://huggingface.co), HF_TOKEN (for gated and private models).");
  cmd->callback([opt] { ExitCode() = RunPull(*opt); });
}

}  // namespace llmhost::cli
