// Dequantization of real fixture rows against values computed independently
// by tests/data/backend/gen_quant_expected.py (stdlib Python written from
// the ggml and MLX format descriptions): GGUF Q8_0, Q4_0, Q4_K, Q6_K rows of
// ../shared/reference/models/llama-tiny-gguf, and MLX 4-bit (group 32) and
// 8-bit (group 64) rows of llama3-tiny-mlx4 and qwen3-tiny-mlx8. The raw
// bytes are stored beside the expected values, so the test runs without
// ../shared; when ../shared is present the stored bytes are checked against
// the files, and whole GGUF tensors are compared with the F32 file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/quant_formats.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::quant_fixture_test {
namespace {

std::vector<uint8_t> FromHex(const std::string& hex) {
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

nlohmann::json LoadCases() {
  auto text = ReadFileToString(testing::TestDataDir() + "/backend/quant_expected.json");
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  if (!text.ok()) return nlohmann::json::array();
  return nlohmann::json::parse(*text)["cases"];
}

// One stored row as a 1-row WeightMatrix over the case's bytes.
struct CaseRow {
  std::vector<uint8_t> data, scales, biases;
  WeightMatrix w;
};

CaseRow MakeRow(const nlohmann::json& c) {
  CaseRow r;
  r.data = FromHex(c["raw_hex"].get<std::string>());
  r.w.rows = 1;
  r.w.cols = c["cols"].get<int64_t>();
  if (c["kind"] == "gguf") {
    r.w.format = WeightFormat::kGgml;
    r.w.ggml_type = static_cast<GgmlType>(c["ggml_type"].get<uint32_t>());
  } else {
    r.w.format = WeightFormat::kMlxAffine;
    r.w.bits = c["bits"].get<int>();
    r.w.group_size = c["group_size"].get<int>();
    r.w.scale_dtype = DType::kBF16;
    r.scales = FromHex(c["scales_hex"].get<std::string>());
    r.biases = FromHex(c["biases_hex"].get<std::string>());
    r.w.scales = r.scales.data();
    r.w.biases = r.biases.data();
  }
  r.w.data = r.data.data();
  return r;
}

TEST(QuantFixture, RowsMatchIndependentPythonDequantization) {
  const nlohmann::json cases = LoadCases();
  ASSERT_EQ(cases.size(), 12u);
  int gguf_types_seen = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c["file"].get<std::string>() + " " + c["tensor"].get<std::string>() + " row " +
                 std::to_string(c["row"].get<int>()));
    CaseRow row = MakeRow(c);
    ASSERT_TRUE(CheckWeight(row.w).ok()) << CheckWeight(row.w).ToString();
    const std::vector<float> expect = c["values"].get<std::vector<float>>();
    ASSERT_EQ(static_cast<int64_t>(expect.size()), row.w.cols);
    if (c["kind"] == "gguf") ++gguf_types_seen;
    for (CpuIsa isa : {CpuIsa::kScalar, BestCpuIsa()}) {
      SetActiveCpuIsaForTesting(isa);
      std::vector<float> got(row.w.cols, -1.0f);
      DequantizeRows(row.w, 0, 1, got.data());
      for (int64_t i = 0; i < row.w.cols; ++i) {
        ASSERT_EQ(got[i], expect[i]) << CpuIsaName(isa) << " element " << i;
      }
    }
    SetActiveCpuIsaForTesting(BestCpuIsa());
  }
  EXPECT_EQ(gguf_types_seen, 8);  // 4 types x 2 rows
}

TEST(QuantFixture, StoredBytesAreTheFixtureBytes) {
  SKIP_IF_NO_SHARED();
  const std::string models = testing::SharedDir() + "/reference/models/";
  for (const auto& c : LoadCases()) {
    const std::string file = c["file"].get<std::string>();
    SCOPED_TRACE(file);
    const std::vector<uint8_t> raw = FromHex(c["raw_hex"].get<std::string>());
    const int64_t row = c["row"].get<int64_t>();
    if (c["kind"] == "gguf") {
      auto g = GgufFile::Open(models + "llama-tiny-gguf/" + file);
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      const GgufTensorInfo* t = (*g)->FindTensor(c["tensor"].get<std::string>());
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(static_cast<uint32_t>(t->type), c["ggml_type"].get<uint32_t>());
      EXPECT_EQ(0, std::memcmp((*g)->TensorData(*t) + row * raw.size(), raw.data(), raw.size()));
    } else {
      auto st = SafetensorsFile::Open(models + file + "/model.safetensors");
      ASSERT_TRUE(st.ok()) << st.status().ToString();
      auto w = (*st)->Tensor(c["tensor"].get<std::string>());
      ASSERT_TRUE(w.ok());
      EXPECT_EQ(0, std::memcmp(w->data + row * raw.size(), raw.data(), raw.size()));
    }
  }
}

// Whole tensors of the quantized GGUF files dequantize close to the F32
// file's weights: the error of each type stays within its quantization step
// (a wrong layout would give errors of the size of the weights themselves).
TEST(QuantFixture, GgufTensorsDequantizeNearTheF32File) {
  SKIP_IF_NO_SHARED();
  const std::string dir = testing::SharedDir() + "/reference/models/llama-tiny-gguf/";
  auto f32 = GgufFile::Open(dir + "llama-tiny-f32.gguf");
  ASSERT_TRUE(f32.ok()) << f32.status().ToString();
  // Max |dequantized - f32| / max |w| per type, about half a quantization step.
  const struct { const char* type; double tol; } kTypes[] = {
      {"q8_0", 0.01}, {"q4_0", 0.15}, {"q4_k", 0.1}, {"q6_k", 0.03}};
  for (const auto& tc : kTypes) {
    auto q = GgufFile::Open(dir + "llama-tiny-" + tc.type + ".gguf");
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    for (const GgufTensorInfo& t : (*q)->tensors()) {
      if (t.shape.size() != 2) continue;
      SCOPED_TRACE(std::string(tc.type) + " " + t.name);
      const GgufTensorInfo* ref = (*f32)->FindTensor(t.name);
      ASSERT_NE(ref, nullptr);
      WeightMatrix w;
      w.format = WeightFormat::kGgml;
      w.ggml_type = t.type;
      w.cols = static_cast<int64_t>(t.shape[0]);
      w.rows = static_cast<int64_t>(t.shape[1]);
      w.data = (*q)->TensorData(t);
      ASSERT_TRUE(CheckWeight(w).ok()) << CheckWeight(w).ToString();
      std::vector<float> got(w.rows * w.cols);
      DequantizeRows(w, 0, w.rows, got.data());
      const float* want = reinterpret_cast<const float*>((*f32)->TensorData(*ref));
      double amax = 0, err = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        amax = std::max(amax, std::fabs(double(want[i])));
        err = std::max(err, std::fabs(double(got[i]) - want[i]));
      }
      EXPECT_LT(err, tc.tol * amax) << "max error " << err << " of max |w| " << amax;
    }
  }
}

}  // namespace
}  // namespace llmhost::quant_fixture_test
