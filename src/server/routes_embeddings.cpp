// POST /v1/embeddings (OpenAI), /api/embed and /api/embeddings (Ollama) and /v1/rerank, /rerank,
// /v2/rerank (Cohere / Jina): parse → the model's lease → tokenize and check
// every input → the model's EmbedExecutor (batched with other requests) →
// the answer, sent from the connection's thread.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>

#include "model/l2_normalize.h"
#include "server/api_server.h"
#include "server/embedding_request.h"
#include "server/model_kind_check.h"
#include "server/pool_errors.h"
#include "server/response_format.h"
#include "util/base64.h"
#include "util/log.h"

namespace llmhost::server {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

void Fail(const std::string& path, const ApiError& e, ResponseWriter& writer) {
  LOG_INFO("http: " << path << ": error " << e.status << ": " << e.message);
  writer.Send(ErrorResponse(e, FlavorForPath(path)));
}

// A failed EmbeddingModel call as an answer.
ApiError ModelError(const Status& s) {
  if (s.code() == StatusCode::kInvalidArgument) return BadRequest(s.message());
  if (s.code() == StatusCode::kResourceExhausted) return ErrorWithStatus(503, s.message(), "unavailable");
  return ErrorWithStatus(500, s.message());
}

void SendJson(ResponseWriter& writer, const OJson& body) {
  HttpResponse r;
  r.body = body.dump(-1, ' ', false, OJson::error_handler_t::replace);
  writer.Send(std::move(r));
}

// Keeps the first max - 1 tokens and the last (the EOS / [SEP] the model pools or expects).
void Truncate(std::vector<int32_t>* ids, int64_t max) {
  if (static_cast<int64_t>(ids->size()) <= max) return;
  const int32_t last = ids->back();
  ids->resize(static_cast<size_t>(max - 1));
  ids->push_back(last);
}

// The request's inputs as the model takes them; a 400 names an input over the
// model's context (unless truncated) or a token id outside its vocabulary.
MaybeError PrepareInputs(const ServedModel& served, EmbeddingsRequest& req, std::vector<EmbeddingInput>* out) {
  const EmbeddingModel& m = *served.embedding;
  const int64_t max = m.max_tokens(), vocab = m.vocab();
  for (size_t i = 0; i < req.size(); ++i) {
    EmbeddingInput in;
    if (req.texts.empty()) {
      in.ids = std::move(req.token_lists[i]);
      for (int32_t t : in.ids) {
        if (t < 0 || t >= vocab) {
          return BadRequest("'input[" + std::to_string(i) + "]' holds token id " + std::to_string(t) +
                                ", outside the model's vocabulary of " + std::to_string(vocab),
                            "input");
        }
      }
    } else {
      in = m.Tokenize(req.texts[i], req.query);
    }
    if (req.truncate) Truncate(&in.ids, max);
    if (static_cast<int64_t>(in.ids.size()) > max) {
      return BadRequest("'input[" + std::to_string(i) + "]' has " + std::to_string(in.ids.size()) +
                            " tokens, more than the model's context of " + std::to_string(max),
                        "input");
    }
    if (in.ids.empty()) return BadRequest("'input[" + std::to_string(i) + "]' has no tokens", "input");
    out->push_back(std::move(in));
  }
  return std::nullopt;
}

int64_t CountTokens(const std::vector<EmbeddingInput>& inputs) {
  int64_t n = 0;
  for (const EmbeddingInput& in : inputs) n += static_cast<int64_t>(in.ids.size());
  return n;
}

// Truncated to `dims` and renormalized (unchanged when dims is unset).
void ApplyDimensions(std::vector<std::vector<float>>& vectors, std::optional<int64_t> dims) {
  if (!dims) return;
  for (std::vector<float>& v : vectors) {
    if (static_cast<int64_t>(v.size()) <= *dims) continue;
    v.resize(static_cast<size_t>(*dims));
    L2Normalize(v);
  }
}

// Little-endian f32 bytes, base64 (OpenAI's encoding_format "base64").
std::string Base64Floats(const std::vector<float>& v) {
  std::string bytes(v.size() * sizeof(float), '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], sizeof bits);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((bits >> (8 * b)) & 0xFF);
  }
  return Base64Encode(bytes);
}

OJson OpenAIBody(const std::string& model, const std::vector<std::vector<float>>& vectors, bool base64,
                 int64_t tokens) {
  OJson data = OJson::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    OJson e = {{"object", "embedding"}, {"index", i}};
    if (base64) {
      e["embedding"] = Base64Floats(vectors[i]);
    } else {
      e["embedding"] = vectors[i];
    }
    data.push_back(std::move(e));
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", model},
          {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
}

OJson OllamaBody(const std::string& model, const std::vector<std::vector<float>>& vectors, int64_t tokens,
                 Clock::time_point t0, Clock::time_point granted) {
  auto ns = [](Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); };
  return {{"model", model},
          {"embeddings", vectors},
          {"total_duration", ns(Clock::now() - t0)},
          {"load_duration", ns(granted - t0)},
          {"prompt_eval_count", tokens}};
}

OJson RerankBody(const std::string& model, const RerankRequest& req, const std::vector<float>& scores,
                 int64_t tokens) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  if (req.top_n && static_cast<size_t>(*req.top_n) < order.size()) order.resize(static_cast<size_t>(*req.top_n));
  OJson results = OJson::array();
  for (size_t i : order) {
    OJson r = {{"index", i}, {"relevance_score", scores[i]}};
    if (req.return_documents) r["document"] = {{"text", req.documents[i]}};
    results.push_back(std::move(r));
  }
  return {{"id", NewResponseId("rerank-")},
          {"model", model},
          {"results", std::move(results)},
          {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
}

// Takes the model's lease without holding the handler's thread, then runs
// `then(lease, granted)` on the connection's thread.
using Granted = std::function<void(std::shared_ptr<ModelLease>, Clock::time_point)>;
void WithLease(ApiServer& server, const std::string& path, const std::string& model,
               const std::shared_ptr<ResponseWriter>& writer, Granted then) {
  EnginePool* pool = &server.pool();
  auto ticket = std::make_shared<std::atomic<uint64_t>>(0);
  writer->OnClose([pool, ticket] {
    if (const uint64_t t = ticket->load()) pool->CancelAcquire(t);
  });
  ticket->store(pool->AcquireAsync(model, [path, writer, then = std::move(then)](AcquireResult r) {
    auto acquired = std::make_shared<AcquireResult>(std::move(r));
    writer->Post([path, writer, then, acquired] {
      if (!acquired->ok()) {
        if (acquired->error.code == PoolErrorCode::kCancelled) return;  // the client went away
        return Fail(path, PoolApiError(acquired->error), *writer);
      }
      then(std::shared_ptr<ModelLease>(std::move(acquired->lease)), Clock::now());
    });
  }));
}

void Observe(ApiServer& server, const std::string& model, const char* kind, size_t inputs, int64_t tokens,
             Clock::time_point t0) {
  server.metrics().ObserveEmbedding({model, kind, static_cast<int64_t>(inputs), tokens, Seconds(Clock::now() - t0)});
}

}  // namespace

void HandleEmbeddings(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  const auto t0 = Clock::now();
  const std::string path = request.path;
  const bool legacy = path == "/api/embeddings";  // Ollama's older route: one prompt, {"embedding": [...]}
  const bool ollama = legacy || path == "/api/embed";
  OJson body;
  if (MaybeError e = ParseJsonObject(request.body, &body)) return Fail(path, *e, *writer);
  auto req = std::make_shared<EmbeddingsRequest>();
  if (MaybeError e = legacy   ? ParseOllamaEmbeddingsRequest(body, req.get())
                     : ollama ? ParseOllamaEmbedRequest(body, req.get())
                              : ParseEmbeddingsRequest(body, req.get())) {
    return Fail(path, *e, *writer);
  }
  if (!req->unused_options.empty()) {
    std::string names;
    for (const std::string& n : req->unused_options) names += (names.empty() ? "" : ", ") + n;
    LOG_INFO("http: " << path << ": options that do not apply to embeddings, unused: " << names);
  }
  if (MaybeError e = CheckKindBeforeLoad(server.pool(), req->model, ModelKind::kEmbedding)) return Fail(path, *e, *writer);
  ApiServer* srv = &server;
  WithLease(server, path, req->model, writer, [srv, path, legacy, ollama, req, writer, t0](
                                                  std::shared_ptr<ModelLease> lease, Clock::time_point granted) {
    const ServedModel& m = *lease->served();
    if (req->keep_alive_s) srv->pool().SetKeepAlive(lease->id(), *req->keep_alive_s);
    if (MaybeError e = CheckModelKind(m, ModelKind::kEmbedding, lease->id())) return Fail(path, *e, *writer);
    if (req->dimensions && *req->dimensions > m.embedding->dim()) {
      return Fail(path,
                  BadRequest("'dimensions' is " + std::to_string(*req->dimensions) + ", more than the model's " +
                                 std::to_string(m.embedding->dim()),
                             "dimensions"),
                  *writer);
    }
    if (legacy && req->texts.front().empty()) return SendJson(*writer, OJson{{"embedding", OJson::array()}});
    std::vector<EmbeddingInput> inputs;
    if (MaybeError e = PrepareInputs(m, *req, &inputs)) return Fail(path, *e, *writer);
    const int64_t tokens = CountTokens(inputs);
    const size_t n = inputs.size();
    EmbedExecutor* executor = m.embed_executor.get();
    // The lease moves on to the connection's thread: released on the
    // executor's, it could unload the model and join that very thread.
    executor->Embed(std::move(inputs), [srv, path, legacy, ollama, req, writer, t0, granted, lease, tokens, n](
                                           Result<std::vector<std::vector<float>>> r) mutable {
      // Formatting (possibly megabytes) happens on the connection's thread too.
      auto result = std::make_shared<Result<std::vector<std::vector<float>>>>(std::move(r));
      writer->Post([srv, path, legacy, ollama, req, writer, t0, granted, lease = std::move(lease), tokens, n, result] {
        if (!result->ok()) return Fail(path, ModelError(result->status()), *writer);
        ApplyDimensions(**result, req->dimensions);
        SendJson(*writer, legacy   ? OJson{{"embedding", (**result).front()}}
                          : ollama ? OllamaBody(lease->id(), **result, tokens, t0, granted)
                                   : OpenAIBody(lease->id(), **result, req->base64, tokens));
        Observe(*srv, lease->id(), "embedding", n, tokens, t0);
      });
    });
  });
}

void HandleRerank(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  const auto t0 = Clock::now();
  const std::string path = request.path;
  OJson body;
  if (MaybeError e = ParseJsonObject(request.body, &body)) return Fail(path, *e, *writer);
  auto req = std::make_shared<RerankRequest>();
  if (MaybeError e = ParseRerankRequest(body, req.get())) return Fail(path, *e, *writer);
  if (MaybeError e = CheckKindBeforeLoad(server.pool(), req->model, ModelKind::kRerank)) return Fail(path, *e, *writer);
  ApiServer* srv = &server;
  WithLease(server, path, req->model, writer, [srv, path, req, writer, t0](std::shared_ptr<ModelLease> lease,
                                                                          Clock::time_point) {
    const ServedModel& m = *lease->served();
    if (MaybeError e = CheckModelKind(m, ModelKind::kRerank, lease->id())) return Fail(path, *e, *writer);
    const int64_t max = m.embedding->max_tokens();
    // The query alone first (its own tokens, no special tokens or prompt:
    // every pair holds at least these): each pair tokenizes it again, so an
    // oversized one is refused before it costs a tokenization per document.
    if (const size_t q = m.tokenizer->Encode(req->query, /*add_special=*/false).size();
        static_cast<int64_t>(q) > max) {
      return Fail(path,
                  BadRequest("'query' is " + std::to_string(q) + " tokens, more than the model's context of " +
                                 std::to_string(max),
                             "query"),
                  *writer);
    }
    std::vector<EmbeddingInput> inputs;
    for (size_t i = 0; i < req->documents.size(); ++i) {
      inputs.push_back(m.embedding->TokenizePair(req->query, req->documents[i]));
      if (static_cast<int64_t>(inputs.back().ids.size()) > max) {
        return Fail(path,
                    BadRequest("the query with 'documents[" + std::to_string(i) + "]' is " +
                                   std::to_string(inputs.back().ids.size()) + " tokens, more than the model's " +
                                   "context of " + std::to_string(max),
                               "documents"),
                    *writer);
      }
    }
    const int64_t tokens = CountTokens(inputs);
    // As for embeddings: the lease is released on the connection's thread.
    m.embed_executor->Score(std::move(inputs), [srv, path, req, writer, t0, lease, tokens](
                                                   Result<std::vector<float>> r) mutable {
      auto result = std::make_shared<Result<std::vector<float>>>(std::move(r));
      writer->Post([srv, path, req, writer, t0, lease = std::move(lease), tokens, result] {
        if (!result->ok()) return Fail(path, ModelError(result->status()), *writer);
        SendJson(*writer, RerankBody(lease->id(), *req, **result, tokens));
        Observe(*srv, lease->id(), "rerank", req->documents.size(), tokens, t0);
      });
    });
  });
}

}  // namespace llmhost::server
