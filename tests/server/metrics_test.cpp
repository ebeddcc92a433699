// Prometheus metrics (server/metrics.h): histogram buckets, the exposition
// text (families, labels escaped, cumulative buckets, +Inf), and what
// ServerMetrics records for responses and generations.
#include <gtest/gtest.h>

#include <string>

#include "pool/pool_types.h"
#include "server/metrics.h"

namespace llmhost::server::metrics_test {
namespace {

bool Has(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

TEST(Metrics, HistogramBucketsAreCumulativeWithInf) {
  Histogram h({0.1, 1});
  for (double v : {0.05, 0.1, 0.5, 3.0}) h.Observe(v);
  Histogram::Snapshot s = h.Read();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 3, 4})) << "le is inclusive; the last bucket is +Inf";
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.sum, 3.65);
  MetricsText t;
  t.Family("x_seconds", "histogram", "A test.");
  t.HistogramSamples("x_seconds", {{"model", "a\"b\\c\nd"}}, s);
  const std::string& out = t.str();
  EXPECT_TRUE(Has(out, "# HELP x_seconds A test."));
  EXPECT_TRUE(Has(out, "# TYPE x_seconds histogram"));
  EXPECT_TRUE(Has(out, R"(x_seconds_bucket{model="a\"b\\c\nd",le="0.1"} 2)")) << out;
  EXPECT_TRUE(Has(out, R"(x_seconds_bucket{model="a\"b\\c\nd",le="1"} 3)"));
  EXPECT_TRUE(Has(out, R"(x_seconds_bucket{model="a\"b\\c\nd",le="+Inf"} 4)"));
  EXPECT_TRUE(Has(out, R"(x_seconds_sum{model="a\"b\\c\nd"} 3.65)"));
  EXPECT_TRUE(Has(out, R"(x_seconds_count{model="a\"b\\c\nd"} 4)"));
}

TEST(Metrics, ResponsesAndGenerationsAreRecorded) {
  ServerMetrics m;
  m.CountResponse("/v1/chat/completions", 200);
  m.CountResponse("/v1/chat/completions", 200);
  m.CountResponse("/v1/models/{id}", 404);
  GenerationObservation g;
  g.model = "tiny";
  g.finish = "length";
  g.queue_s = 0.5;
  g.ttft_s = 0.75;
  g.e2e_s = 2.75;
  g.prompt_tokens = 10;
  g.cached_tokens = 4;
  g.completion_tokens = 5;
  m.ObserveGeneration(g);
  g.ttft_s.reset();  // failed before its first token
  g.finish = "error";
  g.completion_tokens = 0;
  m.ObserveGeneration(g);
  MetricsText t;
  m.Write(t);
  const std::string& out = t.str();
  EXPECT_TRUE(Has(out, R"(llmhost_http_responses_total{route="/v1/chat/completions",status="200"} 2)")) << out;
  EXPECT_TRUE(Has(out, R"(llmhost_http_responses_total{route="/v1/models/{id}",status="404"} 1)"));
  EXPECT_TRUE(Has(out, R"(llmhost_generations_total{model="tiny",finish_reason="length"} 1)"));
  EXPECT_TRUE(Has(out, R"(llmhost_generations_total{model="tiny",finish_reason="error"} 1)"));
  EXPECT_TRUE(Has(out, R"(llmhost_prompt_tokens_total{model="tiny"} 20)"));
  EXPECT_TRUE(Has(out, R"(llmhost_cached_prompt_tokens_total{model="tiny"} 8)"));
  EXPECT_TRUE(Has(out, R"(llmhost_generated_tokens_total{model="tiny"} 5)"));
  EXPECT_TRUE(Has(out, R"(llmhost_time_to_first_token_seconds_count{model="tiny"} 1)"));
  EXPECT_TRUE(Has(out, R"(llmhost_queue_seconds_count{model="tiny"} 2)"));
  EXPECT_TRUE(Has(out, R"(llmhost_prefill_seconds_sum{model="tiny"} 0.25)")) << "first token minus queue";
  EXPECT_TRUE(Has(out, R"(llmhost_inter_token_seconds_sum{model="tiny"} 0.5)")) << "(2.75 - 0.75) / 4 gaps";
  EXPECT_TRUE(Has(out, R"(llmhost_request_seconds_count{model="tiny"} 2)"));
  EXPECT_TRUE(Has(out, "# TYPE llmhost_time_to_first_token_seconds histogram"));
}

TEST(Metrics, UnloadCausesAreFewAndNamed) {
  EXPECT_EQ(UnloadCause("evicted to make room for m"), "evicted_for_load");
  EXPECT_EQ(UnloadCause("idle TTL expired"), "idle_ttl");
  EXPECT_EQ(UnloadCause("KV memory for another model"), "evicted_for_kv");
  EXPECT_EQ(UnloadCause("pending unload, drained (memory pressure)"), "memory_pressure");
  EXPECT_EQ(UnloadCause("memory pressure"), "memory_pressure");
  EXPECT_EQ(UnloadCause("manual unload"), "requested");
  EXPECT_EQ(UnloadCause("unload-if-idle"), "requested");
  EXPECT_EQ(UnloadCause("something new"), "other");
}

}  // namespace
}  // namespace llmhost::server::metrics_test
