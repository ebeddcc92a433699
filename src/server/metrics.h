// Prometheus metrics (GET /metrics, routes_metrics.cpp): what the server
// records as responses go out and generations finish (ServerMetrics), and
// the text exposition format they are written in (MetricsText).
//
// Names follow Prometheus's rules: the llmhost_ prefix, base units
// (seconds, bytes), _total for counters. Histograms have fixed buckets.
//
// Thread safety: ServerMetrics and Histogram may be used from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llmhost::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);  // ascending; +Inf is implied
  void Observe(double value);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), last: above every bound
  double sum_ = 0;
};

using Labels = std::vector<std::pair<std::string, std::string>>;

// Builds the exposition text: a family's HELP and TYPE once, then its samples.
class MetricsText {
 public:
  void Family(const std::string& name, const char* type, const std::string& help);
  void Sample(const std::string& name, const Labels& labels, double value);
  void HistogramSamples(const std::string& name, const Labels& labels, const Histogram::Snapshot& h);
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

// One finished generation, as the metrics see it.
struct GenerationObservation {
  std::string model;
  std::string finish;            // stop, length, tool_calls, abort, error, ...
  double queue_s = 0;            // arrival → the model's lease (queue and load)
  std::optional<double> ttft_s;  // arrival → the first token (none: never started)
  double e2e_s = 0;              // arrival → done
  int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
};

// One answered embedding or rerank request.
struct EmbeddingObservation {
  std::string model;
  std::string kind;     // "embedding" or "rerank"
  int64_t inputs = 0;   // texts embedded, or documents scored
  int64_t tokens = 0;   // tokens run through the model
  double seconds = 0;   // arrival → answer
};

class ServerMetrics {
 public:
  // A response's status, by route (the route table's path: "/v1/models/{id}").
  void CountResponse(const std::string& route, int status);
  void ObserveGeneration(const GenerationObservation& g);
  void ObserveEmbedding(const EmbeddingObservation& e);
  // Its families, into `text`.
  void Write(MetricsText& text) const;

 private:
  struct PerModel {
    PerModel();
    Histogram ttft, queue, prefill, e2e, itl;
    uint64_t prompt = 0, cached = 0, generated = 0;
    std::map<std::string, uint64_t> finishes;
  };

  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> responses_;
  std::map<std::string, PerModel> models_;
  struct PerEmbedder {
    PerEmbedder();
    uint64_t requests = 0, inputs = 0, tokens = 0;
    Histogram seconds;
  };
  std::map<std::pair<std::string, std::string>, PerEmbedder> embedders_;  // by (model, kind)
};

}  // namespace llmhost::server
