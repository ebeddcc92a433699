// The prompts sentence-transformers puts before an encoder's inputs, from
// config_sentence_transformers.json:
//
//   {"prompts": {"query": "Represent this sentence for searching relevant passages: ", "document": ""},
//    "default_prompt_name": null}
//
// A query gets the "query" prompt; a document the first of "document",
// "passage" and "corpus" (the names encode_document tries); either falls
// back to the default prompt when its own is absent. No file: no prompts.
#pragma once

#include <string>

#include "util/status.h"

namespace llmhost {

struct EncoderPrompts {
  std::string query;     // put before a query ("" for none)
  std::string document;  // put before a document
};

// InvalidArgument naming the file for a prompt that is not a string or a
// default_prompt_name that names no prompt.
Result<EncoderPrompts> LoadEncoderPrompts(const std::string& dir);

}  // namespace llmhost
