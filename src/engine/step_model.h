// StepModel: what the scheduler needs from a model, one batched forward step
// (Model::Forward's contract). ModelStep adapts a Model; tests script logits
// with their own implementation.
#pragma once

#include <cstdint>
#include <span>

#include "model/kv_cache.h"
#include "model/model.h"
#include "util/status.h"

namespace llmhost {

class StepModel {
 public:
  virtual ~StepModel() = default;
  // Length of a logits row.
  virtual int64_t vocab_size() const = 0;
  // As Model::Forward: stores the items' new tokens in `cache` (reserving
  // blocks; on failure no sequence changes) and returns the asked rows.
  virtual Status Forward(std::span<const ForwardItem> items, KvCache& cache, ForwardOutput* out) = 0;
};

class ModelStep : public StepModel {
 public:
  explicit ModelStep(Model* model) : model_(model) {}
  int64_t vocab_size() const override { return model_->vocab_size(); }
  Status Forward(std::span<const ForwardItem> items, KvCache& cache, ForwardOutput* out) override {
    return model_->Forward(items, cache, out);
  }

 private:
  Model* model_;
};

}  // namespace llmhost
