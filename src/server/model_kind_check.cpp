#include "server/model_kind_check.h"

#include "pool/embedding_loader.h"

namespace llmhost::server {

namespace {

const char* RoutesOf(ModelKind k) {
  switch (k) {
    case ModelKind::kChat: return "the chat, completion and message routes";
    case ModelKind::kEmbedding: return "/v1/embeddings and /api/embed";
    case ModelKind::kRerank: return "/v1/rerank";
  }
  return "";
}

// The 400 for a model of `kind` asked for `wanted`.
ApiError KindMismatch(ModelKind kind, ModelKind wanted, const std::string& id) {
  std::string message = "model '" + id + "' is " + (kind == ModelKind::kEmbedding ? "an " : "a ") +
                        ModelKindName(kind) + " model, not " + (wanted == ModelKind::kEmbedding ? "an " : "a ") +
                        ModelKindName(wanted) + " model: it answers " + RoutesOf(kind);
  if (kind == ModelKind::kChat) {
    message += std::string(" (a model made for it, e.g. Qwen3-") +
               (wanted == ModelKind::kEmbedding ? "Embedding" : "Reranker") + ", serves " + RoutesOf(wanted) +
               " with \"kind\": \"" + ModelKindName(wanted) + "\" in its settings)";
  }
  ApiError e = BadRequest(std::move(message), "model");
  e.code = "wrong_model_kind";
  return e;
}

}  // namespace

ModelKind ServedKind(const ServedModel& model) {
  if (!model.embedding) return ModelKind::kChat;
  return model.embedding->kind() == EmbeddingKind::kReranker ? ModelKind::kRerank : ModelKind::kEmbedding;
}

MaybeError CheckModelKind(const ServedModel& model, ModelKind wanted, const std::string& id) {
  const ModelKind kind = ServedKind(model);
  if (kind == wanted) return std::nullopt;
  return KindMismatch(kind, wanted, id);
}

MaybeError CheckKindBeforeLoad(const EnginePool& pool, const std::string& name, ModelKind wanted) {
  Result<std::string> id = pool.Resolve(name);
  if (!id.ok()) return std::nullopt;
  Result<ModelSettings> settings = pool.Settings(*id);
  if (!settings.ok()) return std::nullopt;
  for (const DiscoveredModel& m : pool.Models()) {
    if (m.id != *id) continue;
    const ModelKind kind = ServesKind(m, *settings);
    return kind == wanted ? std::nullopt : MaybeError(KindMismatch(kind, wanted, *id));
  }
  return std::nullopt;
}

}  // namespace llmhost::server
