// What a caller hands the engine (GenerationRequest) and what it gets back
// (RequestEvent), for one completion.
//
// Events are delivered in order through the request's callback, on the
// engine's executor thread: one per generated token (its text delta, id and
// logprobs), and exactly one final event (finish != kNone) after which no
// other event comes — per choice: a request of n choices (OpenAI's `n`)
// sends each choice's events, tagged with its index, interleaved. An abort or error may end a request with a final event
// that carries no token. A request rejected by Engine::Submit gets no events.
//
// A request may carry an OutputConstraint: each choice then walks the
// grammar with its own grammar::Matcher (kept with the choice, so that it
// survives preemption and recompute); see OutputConstraint below.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "grammar/matcher.h"
#include "grammar/token_vocab.h"
#include "util/status.h"

namespace llmhost {

enum class FinishReason {
  kNone,    // not finished (a token event)
  kStop,        // EOS or a stop token id, or the output constraint's grammar ended
  kStopString,  // a stop string (RequestEvent::stop_string says which)
  kLength,  // max_tokens, or the end of the context
  kAbort,   // cancelled, or the engine shut down
  kError,   // the step failed, or the output constraint could not give a mask; `error` says why
};

// "stop" (kStop, kStopString), "length", "abort", "error" ("" for kNone):
// OpenAI's finish_reason spelling.
const char* FinishReasonName(FinishReason r);

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;      // prompt positions reused from the prefix cache
  int64_t completion_tokens = 0;  // generated ids so far (a stop id counts)
};

// Choices one request may ask for.
inline constexpr int kMaxChoices = 16;

struct RequestEvent {
  uint64_t request_id = 0;
  int choice = 0;                   // 0 .. GenerationRequest::choices - 1
  std::string text;                 // newly final text (UTF-8, may be empty)
  std::vector<int32_t> token_ids;   // ids generated since the last event (0 or 1)
  std::vector<SampledToken> logprobs;  // per id of token_ids, when logprobs were asked
  FinishReason finish = FinishReason::kNone;
  std::string stop_string;          // kStop by a stop string: which one
  std::optional<int32_t> stop_token;  // kStop by EOS or a stop id: which one
  Status error;                     // kError: what failed
  Usage usage;                      // as of this event
};

// Called on the executor thread. It must return quickly and not block (post
// the event to your own thread or io_context); it may call Engine::Cancel or
// Engine::Submit. It must not throw.
using EventCallback = std::function<void(RequestEvent)>;

// The think block's token budget (Anthropic `thinking.budget_tokens`): once
// the block has run `budget_tokens` generated tokens without closing, the
// engine writes its close itself (`close_ids` are the next tokens, whatever
// the model would have chosen). The block is the output's start when it
// begins with `open` (after whitespace), or everything from the start when
// the prompt opened it.
struct ReasoningBudget {
  int64_t budget_tokens = 0;       // > 0
  bool starts_open = false;        // the generation prompt already opened the block
  std::string open, close;         // its markers as decoded text: "<think>", "</think>"
  std::vector<int32_t> close_ids;  // what closes it: e.g. "\n</think>\n\n" encoded
};

// Constrained decoding (grammar/matcher.h): each choice's output is a string
// of `grammar`. Every step the tokens the grammar does not allow next get
// -inf logits (after the penalties and logit_bias, before temperature and
// top-k/p/min-p; logprobs stay those of the raw distribution); the chosen
// token advances the choice's matcher, and the choice ends with kStop when
// the grammar can go no further (or the grammar allowed EOS and it was
// drawn). A matcher that fails (too many parse stacks) ends the choice with
// kError and its message. The mask of a step is computed while the step's
// forward pass runs (engine/mask_worker.h). Where the grammar leaves no
// choice, the tokens it forces follow the sampled one at once (each with an
// event of its own, without logprobs; where logprobs are asked for, one a
// step with the logprobs of that step's logits) and run through the model
// together at the next step.
//
// With `think`, the output may first hold a free think block (the reasoning
// of a model whose template has one): the constraint starts after its close.
struct OutputConstraint {
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // The vocabulary `grammar` was compiled against (its size is the mask's;
  // ids past it, the model's padding rows, are never allowed).
  std::shared_ptr<const grammar::TokenVocab> vocab;
  struct Think {
    bool starts_open = false;  // the prompt opened the block: free until `close`
    // Otherwise the output may open it first: its open marker as bytes
    // ("<think>", in any tokenization) or as this token (a special token;
    // -1: none). While the output so far is both a start of the marker and
    // of the grammar, both stay possible; "" and -1: constrained at once.
    std::string open;
    int32_t open_id = -1;
    std::string close;  // the close marker as decoded text: "</think>"
  };
  std::optional<Think> think;
  // Append the tokens the grammar forces without sampling them
  // (fast-forward, engine/forced_tokens.h; needs the engine's tokenizer).
  bool fast_forward = true;
};

struct GenerationRequest {
  std::vector<int32_t> prompt;       // at least one id, each in [0, vocab)
  SamplingParams sampling;
  std::optional<int64_t> max_tokens; // >= 0; unset: up to the end of the context
  std::vector<std::string> stop;     // stop strings (need a tokenizer), never emitted
  std::vector<int32_t> stop_token_ids;  // end generation like EOS (the id is counted, not emitted as text)
  bool ignore_eos = false;           // don't stop at the model's EOS ids
  bool skip_special_tokens = true;   // detokenize without special tokens
  // ... but these (the markup an output parser reads: `<tool_call>`, ...).
  std::vector<int32_t> keep_special_ids;
  std::optional<ReasoningBudget> reasoning_budget;
  std::optional<OutputConstraint> constraint;  // needs a tokenizer when `think` is set
  // 1..kMaxChoices completions of the prompt. Choice i > 0 forks choice 0
  // once the prompt is prefilled: it shares the prompt's KV blocks (the last,
  // partial one is copied when it is first written) and samples the same
  // logits on with its own generator, seeded seed + i when `seed` is set.
  int choices = 1;
  // The HTTP request's id (util/log.h CurrentRequestId), shown with the
  // engine's own id on the status page; "" when none.
  std::string request_id;
  EventCallback on_event;
};

}  // namespace llmhost
