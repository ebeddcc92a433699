// `llmhost pull ORG/NAME[@REVISION][:QUANT] [--model-dir DIR] [--include GLOB]...
// [--exclude GLOB]...`: downloads a model from the Hugging Face Hub into the
// first model directory (as `llmhost serve` resolves --model-dir: flag,
// LLMHOST_MODEL_DIR, <home>/settings.json, <home>/models) in the Hugging Face
// cache layout (pool/hub_pull.h). HF_ENDPOINT and HF_TOKEN are honoured.
// Progress goes to stderr: a bar on a terminal, plain lines otherwise.
#include <unistd.h>

#include <algorithm>
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
  int jobs = 4;
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

// Shows HubPullProgress on stderr. On a terminal: a line per finished file
// and one overall bar redrawn in place below them (at most 10 times a
// second); otherwise a line per file start and end, and per tenth of the
// total. Calls come one at a time (hub_pull.h).
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool terminal) : terminal_(terminal), start_(std::chrono::steady_clock::now()) {}

  void operator()(const HubPullProgress& p) {
    using E = HubPullProgress::Event;
    switch (p.event) {
      case E::kListed:
        std::fprintf(stderr, "pull: %zu files, %s\n", p.file_count, Bytes(p.total).c_str());
        return;
      case E::kFileCached:
        Line(p, "already downloaded");
        return;
      case E::kRetry:
        Line(p, p.message + "; retrying");
        return;
      case E::kFileStart:
        if (!terminal_) {
          Line(p, Bytes(p.file_total) + (p.file_done > 0 ? ", resuming at " + Bytes(p.file_done) : ""));
        }
        return;
      case E::kFileBytes:
        if (terminal_) {
          const auto now = std::chrono::steady_clock::now();
          if (now - last_draw_ < std::chrono::milliseconds(100)) return;
          last_draw_ = now;
          DrawBar(p);
        } else if (p.total > 0) {
          const int tenth = static_cast<int>(10 * p.done / p.total);
          if (tenth > tenth_ && tenth < 10) {
            tenth_ = tenth;
            std::fprintf(stderr, "pull: %d%% (%s of %s)\n", 10 * tenth, Bytes(p.done).c_str(), Bytes(p.total).c_str());
          }
        }
        return;
      case E::kFileDone:
        Line(p, "done (" + Bytes(p.file_done) + ")");
        return;
    }
  }

  // Ends the bar's line once the pull is over.
  void Finish() {
    if (bar_drawn_) std::fputc('\n', stderr);
    bar_drawn_ = false;
  }

 private:
  // A line above the bar (the bar is redrawn after it).
  void Line(const HubPullProgress& p, const std::string& text) {
    if (terminal_) std::fputs("\r\033[K", stderr);
    std::fprintf(stderr, "pull: [%zu/%zu] %s: %s\n", p.file_index + 1, p.file_count, p.file.c_str(), text.c_str());
    if (terminal_ && bar_drawn_) DrawBar(p);
  }

  void DrawBar(const HubPullProgress& p) {
    constexpr int kWidth = 30;
    const double frac = p.total > 0 ? std::min(1.0, static_cast<double>(p.done) / p.total) : 0;
    const int fill = static_cast<int>(frac * kWidth);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::string bar(fill, '#');
    bar.resize(kWidth, '-');
    std::fprintf(stderr, "\r[%s] %3d%%  %s / %s  %s/s  %zu/%zu files\033[K", bar.c_str(), static_cast<int>(frac * 100),
                 Bytes(p.done).c_str(), Bytes(p.total).c_str(),
                 Bytes(static_cast<uint64_t>(secs > 0 ? p.done / secs : 0)).c_str(), p.files_done, p.file_count);
    bar_drawn_ = true;
  }

  bool terminal_;
  bool bar_drawn_ = false;
  int tenth_ = 0;
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
  o.jobs = opt.jobs;
  ApplyHubEnvironment(&o);
  auto printer = std::make_shared<ProgressPrinter>(isatty(STDERR_FILENO) == 1);
  o.progress = [printer](const HubPullProgress& p) { (*printer)(p); };

  std::fprintf(stderr, "pull: %s@%s from %s into %s\n", o.ref.repo.c_str(), o.ref.revision.c_str(),
               o.endpoint.c_str(), o.model_dir.c_str());
  auto r = PullFromHub(o);
  printer->Finish();
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
  // Repeatable flags take one value each, so that `--include X ORG/NAME` leaves the model positional.
  auto repeatable = [](CLI::Option* o) { o->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll); };
  repeatable(cmd->add_option("--model-dir", opt->model_dirs,
                             "model directory (as for serve; the first one is used; default <home>/models)"));
  cmd->add_option("--home", opt->home, "llmhost's home: settings.json, default model dir (default ~/.llmhost)");
  repeatable(cmd->add_option("--include", opt->include,
                             "glob of files to download (repeatable; replaces the default: weights, configs, "
                             "tokenizer, chat templates)"));
  repeatable(cmd->add_option("--exclude", opt->exclude, "glob of files to skip (repeatable)"));
  cmd->add_option("--jobs", opt->jobs, "files downloaded at once (default 4)")->check(CLI::Range(1, 64));
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
