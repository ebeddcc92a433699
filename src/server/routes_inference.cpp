// POST /v1/chat/completions, /v1/completions, /v1/messages,
// /v1/messages/count_tokens: parse → model → prompt ids → engine → relay.
#include <chrono>
#include <ctime>

#include "server/anthropic_request.h"
#include "server/api_server.h"
#include "server/openai_request.h"
#include "server/prompt_builder.h"
#include "util/log.h"

namespace llmhost::server {

namespace {

MaybeError ParseRequest(const std::string& path, const OJson& body, InferenceRequest* out) {
  if (path == "/v1/chat/completions") return ParseChatCompletionsRequest(body, out);
  if (path == "/v1/completions") return ParseCompletionsRequest(body, out);
  if (path == "/v1/messages") return ParseMessagesRequest(body, /*count_only=*/false, out);
  return ParseMessagesRequest(body, /*count_only=*/true, out);
}

ApiError ModelError(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound: {
      ApiError e = ErrorWithStatus(404, s.message(), "model_not_found");
      e.param = "model";
      return e;
    }
    case StatusCode::kResourceExhausted:  // the weights or the KV pool do not fit
      return ErrorWithStatus(507, "insufficient memory to load the model: " + s.message());
    default: return ErrorWithStatus(500, "the model could not be loaded: " + s.message());
  }
}

std::unique_ptr<ResponseFormatter> MakeFormatter(const InferenceRequest& r, const ResponseMeta& meta) {
  switch (r.api) {
    case ApiKind::kChatCompletions: return MakeChatCompletionsFormatter(meta, r.stream);
    case ApiKind::kCompletions: return MakeCompletionsFormatter(meta, r.stream);
    default: return MakeMessagesFormatter(meta, r.stream);
  }
}

const char* IdPrefix(ApiKind api) {
  switch (api) {
    case ApiKind::kChatCompletions: return "chatcmpl-";
    case ApiKind::kCompletions: return "cmpl-";
    default: return "msg_";
  }
}

}  // namespace

void HandleInference(ApiServer& server, const HttpRequest& request,
                     const std::shared_ptr<ResponseWriter>& writer) {
  const auto t0 = std::chrono::steady_clock::now();
  const ApiFlavor flavor = FlavorForPath(request.path);
  auto fail = [&](const ApiError& e) { writer->Send(ErrorResponse(e, flavor)); };

  OJson body;
  if (MaybeError e = ParseJsonObject(request.body, &body)) return fail(*e);
  InferenceRequest req;
  if (MaybeError e = ParseRequest(request.path, body, &req)) return fail(*e);
  body = OJson();  // the parsed request holds what is needed

  Result<std::shared_ptr<LoadedModel>> model = server.registry().Get(req.model);
  if (!model.ok()) return fail(ModelError(model.status()));
  std::vector<int32_t> ids;
  if (MaybeError e = BuildPromptIds(req, **model, &ids)) return fail(*e);

  if (req.api == ApiKind::kCountTokens) {
    HttpResponse r;
    r.body = nlohmann::json{{"input_tokens", ids.size()}}.dump();
    writer->Send(std::move(r));
    return;
  }

  ResponseMeta meta;
  meta.id = NewResponseId(IdPrefix(req.api));
  meta.model = (*model)->entry.id;
  meta.created = static_cast<int64_t>(std::time(nullptr));
  meta.include_usage = req.include_usage;
  meta.logprobs = req.sampling.logprobs;
  meta.top_logprobs = req.sampling.top_logprobs;
  const size_t n_prompt = ids.size();
  GenerationRequest gen = MakeGenerationRequest(req, **model, std::move(ids));

  ApiServer* srv = &server;
  const std::string route = request.path;
  auto on_done = [srv, route, t0](const GenerationRelay* relay, const RelayStats& s) {
    auto& c = srv->counters();
    c.generations++;
    c.prompt_tokens += s.prompt_tokens;
    c.cached_tokens += s.cached_tokens;
    c.completion_tokens += s.completion_tokens;
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    LOG_INFO("http: " << route << ": prompt " << s.prompt_tokens << " (cached " << s.cached_tokens
                      << "), completion " << s.completion_tokens << ", finish " << s.finish << ", "
                      << static_cast<int64_t>(ms) << " ms");
    srv->RemoveRelay(relay);
  };
  auto relay = GenerationRelay::Create(writer, MakeFormatter(req, meta), *model,
                                       server.settings().sse_keepalive, flavor, on_done);
  server.AddRelay(relay);
  if (MaybeError e = relay->Submit(std::move(gen))) {
    server.RemoveRelay(relay.get());
    LOG_DEBUG("http: " << request.path << ": refused (" << e->status << "): " << e->message
                       << " [prompt " << n_prompt << " tokens]");
    return fail(*e);
  }
}

}  // namespace llmhost::server
