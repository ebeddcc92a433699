// `llmhost generate --model PATH (--prompt TEXT | --chat TEXT | --ids 1,2,3)
// [--max-tokens N] [--temperature T] [--seed S]`: generates from the model
// and streams the new text (not the prompt) to stdout as it is produced.
//   --prompt  encoded with the tokenizer's own special-token rules (BOS where
//             its post-processor adds one)
//   --chat    one user message through the model's chat template (model
//             directory: chat_template.jinja / tokenizer_config.json; GGUF:
//             tokenizer.chat_template), encoded without added specials
//   --ids     taken as they are
// Greedy by default; stops at the model's EOS ids or after N tokens.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "cli/chat_prompt.h"
#include "cli/commands.h"
#include "cli/model_args.h"
#include "model/generate.h"
#include "model/random_model.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"

namespace llmhost::cli {

namespace {

struct GenerateCliOptions {
  std::string model;
  std::string prompt;
  std::string chat;
  std::string ids;
  int64_t max_tokens = 256;
  double temperature = 0;
  int64_t seed = -1;
  std::string precision = "fast";
  std::string kv_dtype = "f32";
  std::string device = "cpu";
  int tensor_parallel = 1;
  bool show_special = false;
  bool verbose = false;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "llmhost: generate: %s\n", message.c_str());
  return 1;
}

Result<std::vector<int32_t>> PromptIds(const GenerateCliOptions& o, const Model& model,
                                       const Tokenizer& tok) {
  const int given = !o.prompt.empty() + !o.chat.empty() + !o.ids.empty();
  if (given != 1) return Status::InvalidArgument("give exactly one of --prompt, --chat, --ids");
  if (!o.ids.empty()) return ParseIdList(o.ids);
  if (!o.prompt.empty()) return tok.Encode(o.prompt, /*add_special=*/true);
  const auto messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", o.chat}}});
  auto chat = ChatPromptIds(model.path(), tok, messages);
  if (!chat.ok() && chat.status().code() == StatusCode::kNotFound) {
    return Status::NotFound(chat.status().message() + " (use --prompt)");
  }
  if (!chat.ok()) return chat.status();
  return std::move(chat->ids);
}

int RunGenerate(const GenerateCliOptions& o) {
  auto precision = ParsePrecision(o.precision);
  if (!precision.ok()) return Fail(precision.status().ToString());
  if (o.max_tokens < 0) return Fail("--max-tokens must be >= 0");
  auto kv = ParseKvDtype(o.kv_dtype);
  if (!kv.ok()) return Fail("--kv-dtype: " + kv.status().message());
  auto lm = LoadModelForCli(o.model, *precision, o.device, o.verbose, o.tensor_parallel);
  if (!lm.ok()) return Fail(lm.status().ToString());
  Model& model = *lm->model;
  auto tok = LoadModelTokenizer(o.model);
  if (!tok.ok()) return Fail(tok.status().ToString());
  auto prompt = PromptIds(o, model, **tok);
  if (!prompt.ok()) return Fail(prompt.status().ToString());
  if (prompt->empty()) return Fail("the prompt encodes to no tokens");

  GenerateOptions g;
  g.max_tokens = o.max_tokens;
  g.temperature = o.temperature;
  g.seed = o.seed >= 0 ? static_cast<uint64_t>(o.seed) : std::random_device{}();
  g.stop_ids = EosTokenIds(model, tok->get());
  g.kv_dtype = kv->value_or(model.Native16BitType());
  StreamDecoder decoder(**tok, /*skip_special=*/!o.show_special);
  auto emit = [](const std::string& s) {
    if (s.empty()) return;
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  };
  auto on_token = [&](int32_t id) {
    const bool stop = std::find(g.stop_ids.begin(), g.stop_ids.end(), id) != g.stop_ids.end();
    if (!stop || o.show_special) emit(decoder.Add(id));
    return true;
  };
  auto r = Generate(model, *prompt, g, on_token);
  emit(decoder.Finish());
  if (!r.ok()) return Fail(r.status().ToString());
  if (isatty(fileno(stdout))) emit("\n");
  if (o.verbose) {
    std::fprintf(stderr, "llmhost: %zu prompt tokens, %zu generated; resident %.1f MiB\n",
                 prompt->size(), r->size(), ResidentBytes() / 1048576.0);
  }
  return 0;
}

}  // namespace

void RegisterGenerateCommands(CLI::App& app) {
  auto opts = std::make_shared<GenerateCliOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text from a model, streamed to stdout");
  cmd->add_option("--model", opts->model, "model directory, .gguf file or random-weights spec "
                  "(random:ARCH:DTYPE:CONFIG.json[:SEED])")->required();
  cmd->add_option("--prompt", opts->prompt, "raw prompt text (the tokenizer adds BOS where it does)");
  cmd->add_option("--chat", opts->chat, "a user message, through the model's chat template");
  cmd->add_option("--ids", opts->ids, "prompt token ids, comma-separated");
  cmd->add_option("--max-tokens", opts->max_tokens, "tokens to generate at most (default 256)");
  cmd->add_option("--temperature", opts->temperature, "0 = greedy (default); > 0 samples");
  cmd->add_option("--seed", opts->seed, "random seed for sampling (default: random)");
  cmd->add_option("--precision", opts->precision, "fast (default), fast-int8, fast-bf16 (AMX) or f32 (reference path)");
  cmd->add_option("--kv-dtype", opts->kv_dtype,
                  "K/V cache type: f32 (default: the reference), bf16, f16, fp8 (e4m3, saturating at +-448) or auto (the model's 16-bit type)");
  cmd->add_flag("--show-special", opts->show_special, "print special tokens (and the EOS)");
  cmd->add_option("--device", opts->device, "cpu (default), cuda, cuda:N or auto (a GPU when there is one)");
  cmd->add_option("--tensor-parallel", opts->tensor_parallel,
                  "split the model over N devices from --device (GPUs N..N+n-1; on the CPU a test stand-in)")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--verbose", opts->verbose, "print model and memory figures on stderr");
  cmd->callback([opts] { ExitCode() = RunGenerate(*opts); });
}

}  // namespace llmhost::cli
