#include "cli/local_engine.h"

#include <algorithm>

namespace llmhost::cli {

Result<std::unique_ptr<LocalEngine>> LocalEngine::Load(const std::string& path, const std::string& device,
                                                       int max_streams) {
  std::unique_ptr<LocalEngine> e(new LocalEngine());
  ASSIGN_OR_RETURN(e->lm_, LoadModelForCli(path, Precision::kFast, device, /*verbose=*/false));
  ASSIGN_OR_RETURN(e->tok_, Tokenizer::FromPath(path));
  EngineOptions o;
  o.max_concurrent_requests = std::max(max_streams, 1);
  o.max_queue = o.max_concurrent_requests;
  o.kv_dtype = e->lm_.model->Native16BitType();
  ASSIGN_OR_RETURN(e->engine_, Engine::Create(e->lm_.model.get(), e->tok_.get(), o));
  return e;
}

LocalEngine::~LocalEngine() {
  if (engine_) engine_->Shutdown();
}

}  // namespace llmhost::cli
