#include "server/metrics.h"

#include <cmath>
#include <cstdio>

namespace llmhost::server {

namespace {

// Seconds: from a cached prompt's first token to a long prompt's prefill.
const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                              2.5,   5,    10,    25,   60,  120, 300};
  return kBounds;
}

// Seconds between two tokens of one stream.
const std::vector<double>& TokenBuckets() {
  static const std::vector<double> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28};
  return kBounds;
}

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// A label value with \, " and newlines escaped, as the format requires.
std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string LabelText(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ",";
    out += labels[i].first + "=\"" + Escape(labels[i].second) + "\"";
  }
  return out + "}";
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
}

Histogram::Snapshot Histogram::Read() const {
  std::lock_guard<std::mutex> lock(mu_);
  Snapshot s;
  s.bounds = bounds_;
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.sum = sum_;
  s.count = running;
  return s;
}

void MetricsText::Family(const std::string& name, const char* type, const std::string& help) {
  out_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void MetricsText::Sample(const std::string& name, const Labels& labels, double value) {
  out_ += name + LabelText(labels) + " " + Number(value) + "\n";
}

void MetricsText::HistogramSamples(const std::string& name, const Labels& labels, const Histogram::Snapshot& h) {
  for (size_t i = 0; i < h.cumulative.size(); ++i) {
    Labels with = labels;
    with.emplace_back("le", i < h.bounds.size() ? Number(h.bounds[i]) : "+Inf");
    Sample(name + "_bucket", with, static_cast<double>(h.cumulative[i]));
  }
  Sample(name + "_sum", labels, h.sum);
  Sample(name + "_count", labels, static_cast<double>(h.count));
}

ServerMetrics::PerModel::PerModel()
    : ttft(LatencyBuckets()), queue(LatencyBuckets()), prefill(LatencyBuckets()), e2e(LatencyBuckets()),
      itl(TokenBuckets()) {}

ServerMetrics::PerEmbedder::PerEmbedder() : seconds(LatencyBuckets()) {}

void ServerMetrics::ObserveEmbedding(const EmbeddingObservation& e) {
  std::lock_guard<std::mutex> lock(mu_);
  PerEmbedder& m = embedders_.try_emplace({e.model, e.kind}).first->second;
  ++m.requests;
  m.inputs += static_cast<uint64_t>(e.inputs);
  m.tokens += static_cast<uint64_t>(e.tokens);
  m.seconds.Observe(e.seconds);
}

void ServerMetrics::CountResponse(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++responses_[{route, status}];
}

void ServerMetrics::ObserveGeneration(const GenerationObservation& g) {
  std::lock_guard<std::mutex> lock(mu_);
  PerModel& m = models_.try_emplace(g.model).first->second;
  m.queue.Observe(g.queue_s);
  m.e2e.Observe(g.e2e_s);
  if (g.ttft_s) {
    m.ttft.Observe(*g.ttft_s);
    m.prefill.Observe(std::max(0.0, *g.ttft_s - g.queue_s));
    // The stream's mean gap between tokens after the first.
    if (g.completion_tokens > 1) m.itl.Observe((g.e2e_s - *g.ttft_s) / static_cast<double>(g.completion_tokens - 1));
  }
  m.prompt += static_cast<uint64_t>(g.prompt_tokens);
  m.cached += static_cast<uint64_t>(g.cached_tokens);
  m.generated += static_cast<uint64_t>(g.completion_tokens);
  ++m.finishes[g.finish];
}

void ServerMetrics::Write(MetricsText& t) const {
  std::lock_guard<std::mutex> lock(mu_);
  t.Family("llmhost_http_responses_total", "counter", "HTTP responses by route and status code.");
  for (const auto& [key, n] : responses_) {
    t.Sample("llmhost_http_responses_total", {{"route", key.first}, {"status", std::to_string(key.second)}},
             static_cast<double>(n));
  }
  t.Family("llmhost_generations_total", "counter", "Finished generations by model and finish reason.");
  for (const auto& [model, m] : models_) {
    for (const auto& [finish, n] : m.finishes) {
      t.Sample("llmhost_generations_total", {{"model", model}, {"finish_reason", finish}}, static_cast<double>(n));
    }
  }
  struct Tokens {
    const char* name;
    const char* help;
    uint64_t PerModel::*field;
  };
  for (const Tokens& k : {Tokens{"llmhost_prompt_tokens_total", "Prompt tokens of finished generations.", &PerModel::prompt},
                          Tokens{"llmhost_cached_prompt_tokens_total",
                                 "Prompt tokens read from the prefix cache instead of computed.", &PerModel::cached},
                          Tokens{"llmhost_generated_tokens_total", "Tokens generated.", &PerModel::generated}}) {
    t.Family(k.name, "counter", k.help);
    for (const auto& [model, m] : models_) t.Sample(k.name, {{"model", model}}, static_cast<double>(m.*k.field));
  }
  struct Hist {
    const char* name;
    const char* help;
    Histogram PerModel::*field;
  };
  for (const Hist& h : {Hist{"llmhost_time_to_first_token_seconds", "Arrival to the first generated token.",
                             &PerModel::ttft},
                        Hist{"llmhost_queue_seconds", "Arrival to the model's lease: waiting for it to load or for memory.",
                             &PerModel::queue},
                        Hist{"llmhost_prefill_seconds", "The model's lease to the first generated token.",
                             &PerModel::prefill},
                        Hist{"llmhost_inter_token_seconds", "A stream's mean time between tokens after the first.",
                             &PerModel::itl},
                        Hist{"llmhost_request_seconds", "Arrival to the end of the generation.", &PerModel::e2e}}) {
    t.Family(h.name, "histogram", h.help);
    for (const auto& [model, m] : models_) t.HistogramSamples(h.name, {{"model", model}}, (m.*h.field).Read());
  }
  struct EmbedCount {
    const char* name;
    const char* help;
    uint64_t PerEmbedder::*field;
  };
  for (const EmbedCount& k :
       {EmbedCount{"llmhost_embedding_requests_total", "Answered embedding and rerank requests.",
                   &PerEmbedder::requests},
        EmbedCount{"llmhost_embedding_inputs_total", "Texts embedded or documents scored.", &PerEmbedder::inputs},
        EmbedCount{"llmhost_embedding_tokens_total", "Tokens run through embedding and rerank models.",
                   &PerEmbedder::tokens}}) {
    t.Family(k.name, "counter", k.help);
    for (const auto& [key, m] : embedders_) {
      t.Sample(k.name, {{"model", key.first}, {"kind", key.second}}, static_cast<double>(m.*k.field));
    }
  }
  t.Family("llmhost_embedding_request_seconds", "histogram",
           "Arrival to the answer of an embedding or rerank request.");
  for (const auto& [key, m] : embedders_) {
    t.HistogramSamples("llmhost_embedding_request_seconds", {{"model", key.first}, {"kind", key.second}},
                       m.seconds.Read());
  }
}

}  // namespace llmhost::server
