// `llmhost synth-model --arch NAME --config JSON|@FILE --dtype bf16|mlx4|mlx8|fp8|gptq4|awq4
// [--group-size 64] [--seed S] --out DIR`: writes a model directory of the
// given shape with random weights, a byte-level BPE tokenizer of its vocab
// size and a ChatML template (for benchmarks and memory tests).
// `llmhost synth-model --arch scripted --script FILE --out DIR`: the scripted
// test model (model/scripted_model.h), whose output is the script's text.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "model/synth_model.h"
#include "util/file.h"
#include "util/json.h"

namespace llmhost::cli {

namespace {

struct SynthCliOptions {
  std::string arch, config, dtype, out, script;
  int group_size = 64;
  uint64_t seed = 0;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "llmhost: synth-model: %s\n", message.c_str());
  return 1;
}

// --config: inline JSON, or @FILE.
Result<nlohmann::ordered_json> ReadConfig(const std::string& arg) {
  std::string text = arg, name = "--config";
  if (!arg.empty() && arg[0] == '@') {
    name = arg.substr(1);
    ASSIGN_OR_RETURN(text, ReadFileToString(name, kJsonModelFileMaxBytes));
  }
  ASSIGN_OR_RETURN(nlohmann::ordered_json j, ParseOrderedJson(text, name, kJsonModelFileMaxBytes));
  if (!j.is_object()) return Status::InvalidArgument(name + ": expected a JSON object");
  return j;
}

int RunScripted(const SynthCliOptions& o) {
  if (o.script.empty()) return Fail("--arch scripted needs --script FILE (script.json: {\"replies\": [...]})");
  if (!o.config.empty() || !o.dtype.empty()) {
    return Fail("--arch scripted takes no --config or --dtype (its shape is fixed)");
  }
  auto text = ReadFileToString(o.script, kJsonModelFileMaxBytes);
  if (!text.ok()) return Fail(text.status().ToString());
  auto r = SynthesizeScriptedModel(o.out, *text, o.seed, &ThreadPool::Default());
  if (!r.ok()) return Fail(r.status().ToString());
  std::fprintf(stderr, "llmhost: synth-model: wrote the scripted model %s\n", o.out.c_str());
  return 0;
}

int RunSynth(const SynthCliOptions& o) {
  if (o.arch == "scripted") return RunScripted(o);
  if (!o.script.empty()) return Fail("--script is for --arch scripted");
  if (o.config.empty()) return Fail("--config is required");
  if (o.dtype.empty()) return Fail("--dtype is required");
  SynthOptions s;
  s.arch = o.arch;
  auto dtype = ParseSynthDType(o.dtype);
  if (!dtype.ok()) return Fail(dtype.status().ToString());
  s.dtype = *dtype;
  auto config = ReadConfig(o.config);
  if (!config.ok()) return Fail(config.status().ToString());
  s.config = std::move(config).value();
  s.group_size = o.group_size;
  s.seed = o.seed;
  s.out_dir = o.out;
  s.pool = &ThreadPool::Default();
  const auto t0 = std::chrono::steady_clock::now();
  auto r = SynthesizeModel(s);
  if (!r.ok()) return Fail(r.status().ToString());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "llmhost: synth-model: wrote %s (%s %s, %lld tensors, %.1f MiB of weights) in %.1f s\n",
               o.out.c_str(), o.arch.c_str(), o.dtype.c_str(), static_cast<long long>(r->tensors),
               r->weight_bytes / 1048576.0, secs);
  return 0;
}

}  // namespace

void RegisterSynthCommands(CLI::App& app) {
  auto opts = std::make_shared<SynthCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "synth-model", "Write a model directory of a given shape with random weights (for benchmarks)");
  cmd->add_option("--arch", opts->arch,
                  "architecture: llama, mistral, qwen2, qwen3, qwen3_moe, phi3, gemma3_text, or scripted "
                  "(a test model whose output is --script's text)")
      ->required();
  cmd->add_option("--config", opts->config,
                  "config.json keys as inline JSON or @FILE (hidden_size, num_hidden_layers, "
                  "num_attention_heads, vocab_size, intermediate_size, ...); required but for scripted");
  cmd->add_option("--dtype", opts->dtype,
                  "bf16, mlx4, mlx8, fp8 (e4m3, 128x128 block scales), gptq4, awq4 or w4a16 (compressed-tensors "
                  "pack-quantized); required but for scripted");
  cmd->add_option("--script", opts->script,
                  "--arch scripted: script.json ({\"replies\": [{\"when\": TEXT, \"text\": TEXT}, ...]}: the reply "
                  "whose `when` occurs latest in the prompt is generated; one without `when` is the default)");
  cmd->add_option("--group-size", opts->group_size, "MLX / GPTQ / AWQ group size: 32, 64 (default) or 128");
  cmd->add_option("--seed", opts->seed, "random seed (default 0); the same seed writes the same files");
  cmd->add_option("--out", opts->out, "output directory (created if missing)")->required();
  cmd->callback([opts] { ExitCode() = RunSynth(*opts); });
}

}  // namespace llmhost::cli
