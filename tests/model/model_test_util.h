// Shared helpers of the model tests: where fixtures and goldens live, and
// how logits are compared.
//
// Fixtures come from ../shared/reference when it exists, else from the
// copies in tests/data/models (every architecture, one GGUF file), so a
// fresh clone still tests every architecture.
#pragma once

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::testing {

// Directory of the reference models and of the goldens ("" if neither the
// shared copy nor the project copy has `fixture`).
inline std::string ModelsRoot() {
  const std::string shared = SharedDir();
  if (!shared.empty()) return shared + "/reference/models";
  return TestDataDir() + "/models";
}
inline std::string GoldenRoot() {
  const std::string shared = SharedDir();
  if (!shared.empty()) return shared + "/reference/golden";
  return TestDataDir() + "/models/golden";
}

struct GoldenPrompt {
  std::string name;
  std::vector<int32_t> input_ids;
  std::vector<int32_t> greedy_tokens;
  double min_top2_margin = 0;
  std::vector<float> logits;  // [T, vocab] (or [vocab] for last-position goldens)
  int64_t vocab = 0;
  bool last_only = false;
};

struct Golden {
  std::string model_path;  // directory or .gguf file
  std::vector<GoldenPrompt> prompts;
};

// Reads <golden>/<name>.json and .safetensors. Fails the test (and returns
// false) when they cannot be read.
inline bool LoadGolden(const std::string& name, Golden* g) {
  const std::string base = GoldenRoot() + "/" + name;
  auto text = ReadFileToString(base + ".json");
  if (!text.ok()) {
    ADD_FAILURE() << text.status().ToString();
    return false;
  }
  nlohmann::json j = nlohmann::json::parse(*text);
  g->model_path = ModelsRoot() + "/" + (j.contains("file") ? j["file"].get<std::string>() : name);
  auto st = SafetensorsFile::Open(base + ".safetensors");
  if (!st.ok()) {
    ADD_FAILURE() << st.status().ToString();
    return false;
  }
  for (auto& [pname, pj] : j["prompts"].items()) {
    GoldenPrompt p;
    p.name = pname;
    p.input_ids = pj["input_ids"].get<std::vector<int32_t>>();
    p.greedy_tokens = pj["greedy_tokens"].get<std::vector<int32_t>>();
    p.min_top2_margin = pj["greedy_min_top2_margin"].get<double>();
    const SafetensorsTensorInfo* t = (*st)->Find(pname + ".logits");
    if (!t) {
      t = (*st)->Find(pname + ".last_logits");
      p.last_only = true;
    }
    if (!t || t->dtype != DType::kF32) {
      ADD_FAILURE() << name << ": no F32 logits for prompt " << pname;
      return false;
    }
    TensorView v = (*st)->View(*t);
    p.vocab = v.shape.back();
    p.logits.resize(static_cast<size_t>(v.NumElements()));
    std::memcpy(p.logits.data(), v.data, v.n_bytes);
    g->prompts.push_back(std::move(p));
  }
  return true;
}

// ‖got − ref‖ / ‖ref‖ over one row of n values.
inline double RowRelError(const float* got, const float* ref, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num) / (den > 0 ? std::sqrt(den) : 1.0);
}

inline double MaxAbsError(const float* got, const float* ref, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(got[i]) - ref[i]));
  return m;
}

inline int32_t ArgMax(const float* v, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (v[i] > v[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

}  // namespace llmhost::testing
