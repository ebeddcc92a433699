// Which routes a loaded model answers: a chat model (it has an Engine) the
// chat, completion and message routes; an embedder /v1/embeddings and
// /api/embed; a reranker /v1/rerank. Asked the wrong way, a 400 that says
// which kind the model is and where to ask instead.
#pragma once

#include <string>

#include "pool/engine_pool.h"
#include "pool/loaded_engine.h"
#include "pool/model_settings.h"
#include "server/api_error.h"

namespace llmhost::server {

ModelKind ServedKind(const ServedModel& model);
MaybeError CheckModelKind(const ServedModel& model, ModelKind wanted, const std::string& id);
// Before loading: the 400 for a model `name` whose kind
// (pool/embedding_loader.h: ServesKind) is not `wanted`, so that it is not
// loaded only to be refused. Nothing for a name the pool does not know.
MaybeError CheckKindBeforeLoad(const EnginePool& pool, const std::string& name, ModelKind wanted);

}  // namespace llmhost::server
