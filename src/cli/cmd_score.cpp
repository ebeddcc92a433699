// `llmhost score --model PATH --ids 1,2,3 --out FILE.safetensors
// [--precision f32|fast]`: runs the ids through the model in one forward pass
// and writes the logits of every position as `logits` (F32, [T, vocab]).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/model_args.h"
#include "formats/safetensors_writer.h"

namespace llmhost::cli {

namespace {

struct ScoreOptions {
  std::string model;
  std::string ids;
  std::string out;
  std::string precision = "f32";
  std::string kv_dtype = "f32";
  std::string device = "cpu";
  int tensor_parallel = 1;
  bool verbose = false;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "llmhost: score: %s\n", message.c_str());
  return 1;
}

int RunScore(const ScoreOptions& o) {
  auto ids = ParseIdList(o.ids);
  if (!ids.ok()) return Fail(ids.status().ToString());
  auto precision = ParsePrecision(o.precision);
  if (!precision.ok()) return Fail(precision.status().ToString());
  auto kv = ParseKvDtype(o.kv_dtype);
  if (!kv.ok()) return Fail("--kv-dtype: " + kv.status().message());
  auto lm = LoadModelForCli(o.model, *precision, o.device, o.verbose, o.tensor_parallel);
  if (!lm.ok()) return Fail(lm.status().ToString());
  Model& model = *lm->model;
  const int64_t t = static_cast<int64_t>(ids->size());
  auto cache = model.CreateKvCache((t + kDefaultKvBlockSize - 1) / kDefaultKvBlockSize, kDefaultKvBlockSize,
                                   kv->value_or(model.Native16BitType()));
  if (!cache.ok()) return Fail(cache.status().ToString());
  KvSequence seq;
  ForwardItem item{&seq, *ids, LogitsRows::kAll};
  ForwardOutput out;
  Status st = model.Forward({&item, 1}, **cache, &out);
  if (!st.ok()) return Fail(st.ToString());
  SafetensorsWriteTensor tensor;
  tensor.name = "logits";
  tensor.dtype = DType::kF32;
  tensor.shape = {t, out.vocab};
  tensor.data = std::string_view(reinterpret_cast<const char*>(out.logits.data()),
                                 out.logits.size() * sizeof(float));
  st = WriteSafetensorsFile(o.out, {tensor}, {});
  if (!st.ok()) return Fail(st.ToString());
  return 0;
}

}  // namespace

void RegisterScoreCommands(CLI::App& app) {
  auto opts = std::make_shared<ScoreOptions>();
  CLI::App* cmd = app.add_subcommand(
      "score", "Write the logits of every position of a token sequence (safetensors, F32 [T, vocab])");
  cmd->add_option("--model", opts->model, "model directory, .gguf file or random-weights spec "
                  "(random:ARCH:DTYPE:CONFIG.json[:SEED])")->required();
  cmd->add_option("--ids", opts->ids, "token ids, comma-separated (e.g. 1,2,3)")->required();
  cmd->add_option("--out", opts->out, "output .safetensors file")->required();
  cmd->add_option("--precision", opts->precision,
                  "f32 (reference path, default), fast (SIMD kernels), fast-int8 or fast-bf16 (AMX)");
  cmd->add_option("--kv-dtype", opts->kv_dtype,
                  "K/V cache type: f32 (default: the reference), bf16, f16, fp8 (e4m3, saturating at +-448) or auto (the model's 16-bit type)");
  cmd->add_option("--device", opts->device, "cpu (default), cuda, cuda:N or auto (a GPU when there is one)");
  cmd->add_option("--tensor-parallel", opts->tensor_parallel,
                  "split the model over N devices from --device (GPUs N..N+n-1; on the CPU a test stand-in)")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--verbose", opts->verbose, "print model and memory figures on stderr");
  cmd->callback([opts] { ExitCode() = RunScore(*opts); });
}

}  // namespace llmhost::cli
