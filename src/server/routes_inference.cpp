// POST /v1/chat/completions, /v1/completions, /v1/messages,
// /v1/messages/count_tokens, /v1/responses: parse → model → prompt ids →
// engine → relay; GET /v1/responses/{id}: a stored response.
#include <atomic>
#include <chrono>
#include <ctime>

#include "server/anthropic_request.h"
#include "server/api_server.h"
#include "server/model_kind_check.h"
#include "server/ollama_request.h"
#include "server/openai_request.h"
#include "server/output_constraint.h"
#include "server/output_plan.h"
#include "server/pool_errors.h"
#include "server/prompt_builder.h"
#include "server/responses_request.h"
#include "util/log.h"

namespace llmhost::server {

namespace {

MaybeError ParseRequest(const HttpRequest& request, const OJson& body, const ResponseStore& store,
                        InferenceRequest* out) {
  const std::string& path = request.path;
  if (path == "/v1/chat/completions") return ParseChatCompletionsRequest(body, out);
  if (path == "/api/chat" || path == "/api/generate") {
    std::vector<std::string> ignored;
    MaybeError e = path == "/api/chat" ? ParseOllamaChatRequest(body, out, &ignored)
                                       : ParseOllamaGenerateRequest(body, out, &ignored);
    if (!e && !ignored.empty()) {
      std::string names;
      for (const std::string& n : ignored) names += (names.empty() ? "" : ", ") + n;
      LOG_INFO("http: " << path << ": options left to the server: " << names);
    }
    return e;
  }
  if (path == "/v1/responses") return ParseResponsesRequest(body, store, out);
  if (path == "/v1/completions") return ParseCompletionsRequest(body, out);
  const std::string_view beta = request.Header("anthropic-beta");
  if (path == "/v1/messages") return ParseMessagesRequest(body, /*count_only=*/false, out, beta);
  return ParseMessagesRequest(body, /*count_only=*/true, out, beta);
}

std::unique_ptr<ResponseFormatter> MakeFormatter(const InferenceRequest& r, const ResponseMeta& meta,
                                                 ResponseStore* store) {
  switch (r.api) {
    case ApiKind::kChatCompletions: return MakeChatCompletionsFormatter(meta, r.stream);
    case ApiKind::kCompletions: return MakeCompletionsFormatter(meta, r.stream);
    case ApiKind::kResponses: {
      ResponseCompleted on_complete;
      if (r.responses_echo.value("store", true)) {
        // Kept for GET /v1/responses/{id} and previous_response_id.
        on_complete = [store, id = meta.id, conversation = r.responses_conversation](
                          const OJson& response, const OJson& assistant) mutable {
          conversation.push_back(assistant);
          store->Put(id, StoredResponse{response, std::move(conversation)});
        };
      }
      return MakeResponsesFormatter(meta, r.stream, r.responses_echo, std::move(on_complete));
    }
    case ApiKind::kOllamaChat: return MakeOllamaFormatter(meta, r.stream, /*chat=*/true);
    case ApiKind::kOllamaGenerate: return MakeOllamaFormatter(meta, r.stream, /*chat=*/false);
    default: return MakeMessagesFormatter(meta, r.stream);
  }
}

const char* IdPrefix(ApiKind api) {
  switch (api) {
    case ApiKind::kChatCompletions: return "chatcmpl-";
    case ApiKind::kCompletions: return "cmpl-";
    case ApiKind::kResponses: return "resp_";
    default: return "msg_";
  }
}

// A request answered with an error: a line for the operator (a warning when
// the server is at fault), then the response.
void Fail(const std::string& path, const ApiError& e, ApiFlavor flavor, ResponseWriter& writer) {
  LogFields f{{"path", path}, {"status", e.status}, {"error", e.message}};
  if (e.status >= 500) {
    LOG_WARN_FIELDS(f, "http: " << path << ": error " << e.status << ": " << e.message);
  } else {
    LOG_INFO_FIELDS(f, "http: " << path << ": error " << e.status << ": " << e.message);
  }
  writer.Send(ErrorResponse(e, flavor));
}

// Ollama's answer to a request that only loads or unloads its model.
HttpResponse OllamaDoneResponse(const InferenceRequest& req, const std::string& model, const char* reason) {
  OJson j = {{"model", model}, {"created_at", OllamaTimestamp()}};
  if (req.api == ApiKind::kOllamaGenerate) {
    j["response"] = "";
  } else {
    j["message"] = {{"role", "assistant"}, {"content", ""}};
  }
  j["done_reason"] = reason;
  j["done"] = true;
  HttpResponse r;
  r.body = j.dump();
  return r;
}

// After the model's lease is granted (on the handler's thread, or the
// pool's when the request had to queue): prompt, prefill guard, engine.
void ContinueInference(ApiServer& server, const std::string& path, InferenceRequest req,
                       std::chrono::steady_clock::time_point t0, const std::shared_ptr<ResponseWriter>& writer,
                       AcquireResult acquired) {
  const auto granted = std::chrono::steady_clock::now();  // the end of the queue (and load) wait
  const ApiFlavor flavor = FlavorForPath(path);
  auto fail = [&](const ApiError& e) { Fail(path, e, flavor, *writer); };
  if (!acquired.ok()) {
    if (acquired.error.code == PoolErrorCode::kCancelled) return;  // the client went away
    return fail(PoolApiError(acquired.error));
  }
  std::shared_ptr<ModelLease> lease(std::move(acquired.lease));
  const ServedModel& model = *lease->served();
  if (req.keep_alive_s) server.pool().SetKeepAlive(lease->id(), *req.keep_alive_s);
  if (req.load_only) return writer->Send(OllamaDoneResponse(req, lease->id(), "load"));
  if (MaybeError e = CheckModelKind(model, ModelKind::kChat, lease->id())) return fail(*e);
  ApplyModelSettings(lease->settings(), &req);
  std::vector<int32_t> ids;
  std::string prompt_text;
  if (MaybeError e = BuildPromptIds(req, model, &ids, &prompt_text)) return fail(*e);

  if (req.api == ApiKind::kCountTokens) {
    HttpResponse r;
    r.body = nlohmann::json{{"input_tokens", ids.size()}}.dump();
    writer->Send(std::move(r));
    return;
  }
  // The prompt's memory before any work: only what the prefix cache and the
  // KV tiers do not hold is priced.
  const int64_t cached = model.engine->CachedPrefixTokens(ids);
  PoolError guard = server.pool().CheckPrefill(*lease, static_cast<int64_t>(ids.size()), cached);
  if (!guard.ok()) return fail(PoolApiError(guard));

  ResponseMeta meta;
  meta.id = NewResponseId(IdPrefix(req.api));
  meta.model = model.entry.id;
  meta.created = static_cast<int64_t>(std::time(nullptr));
  meta.include_usage = req.include_usage;
  meta.logprobs = req.sampling.logprobs;
  meta.top_logprobs = req.sampling.top_logprobs;
  meta.choices = req.choices;
  const size_t n_prompt = ids.size();
  GenerationRequest gen = MakeGenerationRequest(req, model, std::move(ids));
  gen.choices = req.choices;
  gen.request_id = CurrentRequestId();
  OutputPlan plan = PlanOutput(req, model, lease->settings(), prompt_text, &gen);
  if (MaybeError e = AttachOutputConstraint(req, model, plan, &gen)) return fail(*e);

  ApiServer* srv = &server;
  // Runs on the engine's thread: the completion line keeps the request's id.
  auto on_done = [srv, path, t0, granted, model_id = model.entry.id, request_id = CurrentRequestId()](
                     const GenerationRelay* relay, const RelayStats& s) {
    ScopedRequestId scope(request_id);
    const auto now = std::chrono::steady_clock::now();
    auto seconds = [](std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); };
    GenerationObservation o;
    o.model = model_id;
    o.finish = s.finish;
    o.queue_s = seconds(granted - t0);
    if (s.first_token) o.ttft_s = seconds(*s.first_token - t0);
    o.e2e_s = seconds(now - t0);
    o.prompt_tokens = s.prompt_tokens;
    o.cached_tokens = s.cached_tokens;
    o.completion_tokens = s.completion_tokens;
    srv->metrics().ObserveGeneration(o);
    auto& c = srv->counters();
    c.generations++;
    c.prompt_tokens += s.prompt_tokens;
    c.cached_tokens += s.cached_tokens;
    c.completion_tokens += s.completion_tokens;
    if (o.ttft_s) {
      c.first_tokens++;
      c.ttft_us += static_cast<int64_t>(*o.ttft_s * 1e6);
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    LogFields f{{"path", path},
                {"prompt_tokens", s.prompt_tokens},
                {"cached_tokens", s.cached_tokens},
                {"completion_tokens", s.completion_tokens},
                {"finish", s.finish},
                {"duration_ms", static_cast<int64_t>(ms)}};
    LOG_INFO_FIELDS(f, "http: " << path << ": prompt " << s.prompt_tokens << " (cached " << s.cached_tokens
                                << "), completion " << s.completion_tokens << ", finish " << s.finish << ", "
                                << static_cast<int64_t>(ms) << " ms");
    srv->RemoveRelay(relay);
  };
  auto relay = GenerationRelay::Create(writer, MakeFormatter(req, meta, &server.responses()), std::move(lease),
                                       server.settings().sse_keepalive, flavor, on_done, std::move(plan));
  server.AddRelay(relay);
  if (MaybeError e = relay->Submit(std::move(gen))) {
    server.RemoveRelay(relay.get());
    LOG_DEBUG("http: " << path << ": refused (" << e->status << "): " << e->message << " [prompt "
                       << n_prompt << " tokens]");
    return fail(*e);
  }
}

}  // namespace

void HandleInference(ApiServer& server, const HttpRequest& request,
                     const std::shared_ptr<ResponseWriter>& writer) {
  const auto t0 = std::chrono::steady_clock::now();
  const ApiFlavor flavor = FlavorForPath(request.path);
  auto fail = [&](const ApiError& e) { Fail(request.path, e, flavor, *writer); };

  OJson body;
  if (MaybeError e = ParseJsonObject(request.body, &body)) return fail(*e);
  InferenceRequest req;
  if (MaybeError e = ParseRequest(request, body, server.responses(), &req)) return fail(*e);
  body = OJson();  // the parsed request holds what is needed
  if (req.load_only && req.keep_alive_s && *req.keep_alive_s == 0) {
    // Ollama's way to unload a model: nothing to generate, no time to stay.
    Result<std::string> id = server.pool().Resolve(req.model);
    if (!id.ok()) return fail(ErrorWithStatus(404, id.status().message(), "model_not_found"));
    PoolError e = server.pool().UnloadIfIdle(*id);
    if (!e.ok()) return fail(PoolApiError(e));
    return writer->Send(OllamaDoneResponse(req, *id, "unload"));
  }

  // The model may have to load, or wait for memory that busy models hold:
  // the request queues in the pool without holding a handler thread.
  ApiServer* srv = &server;
  const std::string path = request.path;
  const std::string model = req.model;
  auto cont = std::make_shared<InferenceRequest>(std::move(req));
  EnginePool* pool = &server.pool();
  // Queued: a client that hangs up leaves the queue. (Set first: once the
  // lease is granted, the relay replaces it with its own.)
  auto ticket = std::make_shared<std::atomic<uint64_t>>(0);
  writer->OnClose([pool, ticket] {
    if (const uint64_t t = ticket->load()) pool->CancelAcquire(t);
  });
  // The lease may be granted on the pool's manager thread (after a load or a
  // wait): the prompt is rendered and tokenized on the connection's transport
  // thread, so that the manager thread only decides and loads.
  ticket->store(pool->AcquireAsync(model, [srv, path, cont, t0, writer](AcquireResult r) {
    auto granted = std::make_shared<AcquireResult>(std::move(r));
    writer->Post([srv, path, cont, t0, writer, granted] {
      ContinueInference(*srv, path, std::move(*cont), t0, writer, std::move(*granted));
    });
  }));
}

void HandleStoredResponse(ApiServer& server, const HttpRequest& request,
                          const std::shared_ptr<ResponseWriter>& writer) {
  const std::string id = request.path.substr(std::string_view("/v1/responses/").size());
  std::optional<StoredResponse> stored = id.empty() ? std::nullopt : server.responses().Get(id);
  if (!stored) {
    return writer->Send(ErrorResponse(
        ErrorWithStatus(404, "No response with id '" + id + "' is stored (responses are kept in memory, the most "
                                 "recent " + std::to_string(ResponseStore::kMaxResponses) + ", when sent with store)"),
        ApiFlavor::kOpenAI));
  }
  HttpResponse r;
  r.body = stored->response.dump(-1, ' ', false, OJson::error_handler_t::replace);
  writer->Send(std::move(r));
}

}  // namespace llmhost::server
