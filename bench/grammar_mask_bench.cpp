// Token-mask speed of the grammar layer on real vocabularies.
//
//   build/bench/grammar_mask_bench [--shared DIR] [--gens 20] [--steps 150] [--only tok_llama3.json]
//
// For Llama-3 (128K) and Qwen3 (152K) and a few grammars (GBNF, JSON
// Schemas, any JSON object): the compile time (median of 9, each with a
// fresh mask cache), then sampled generations: at each step fill the mask,
// pick a pseudo-random allowed token (EOS with probability 0.3 where
// allowed), accept it. Prints the per-mask time distribution of
//   cold vocab   the first generation of a grammar in a process that has
//                seen no grammar (the vocabulary's shared mask cache empty),
//   new grammar  the same generation of a fresh compile in a process that
//                has run every other grammar of the list once (what a new
//                schema pays once other schemas ran),
//   all gens     every generation of one compiled grammar (warm).
// Times are the thread's CPU time (the machine is shared).
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/shared_mask_cache.h"
#include "grammar/token_vocab.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"

using namespace llmhost;
using namespace llmhost::grammar;

namespace {

double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct NamedGrammar {
  enum class Kind { kGbnf, kGbnfFile, kSchema, kJsonObject };
  const char* name;
  Kind kind;
  const char* text;  // kGbnfFile: a path under the source tree
};

const NamedGrammar kGrammars[] = {
    {"json", NamedGrammar::Kind::kGbnfFile, "tests/data/grammar/json.gbnf"},
    {"object-schema", NamedGrammar::Kind::kGbnf, R"(root ::= "{" ws "\"name\"" ws ":" ws string ws "," ws "\"age\"" ws ":" ws integer ws "," ws "\"tags\"" ws ":" ws "[" ws ( string ws ( "," ws string ws )* )? "]" ws "," ws "\"active\"" ws ":" ws ( "true" | "false" ) ws "}"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
ws ::= [ \t\n]{0,4}
)"},
    {"brackets", NamedGrammar::Kind::kGbnf, R"(root ::= list
list ::= "[" ( item ( "," item )* )? "]"
item ::= list | [a-z]+
)"},
    {"quoted-text", NamedGrammar::Kind::kGbnf, R"(root ::= "\"" [^"]* "\"")"},
    // Claude Code's Bash tool (descriptions left out), a person record, any object.
    {"bash-tool", NamedGrammar::Kind::kSchema,
     R"({"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"},
         "description": {"type": "string"}, "run_in_background": {"type": "boolean"},
         "dangerouslyDisableSandbox": {"type": "boolean"}}, "required": ["command"], "additionalProperties": false})"},
    {"person-schema", NamedGrammar::Kind::kSchema,
     R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
         "email": {"type": "string", "format": "email"}, "tags": {"type": "array", "items": {"type": "string"}},
         "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}}}},
         "required": ["name", "age"]})"},
    {"bounded-strings", NamedGrammar::Kind::kSchema,
     R"({"type": "object", "properties": {"id": {"type": "string", "maxLength": 32},
         "note": {"type": "string", "minLength": 1, "maxLength": 200}}, "required": ["id", "note"],
         "additionalProperties": false})"},
    {"json-object", NamedGrammar::Kind::kJsonObject, ""},
};

Result<RuleId> Build(const NamedGrammar& ng, Grammar& g, const TokenVocab* vocab) {
  switch (ng.kind) {
    case NamedGrammar::Kind::kGbnf:
      return AddGbnf(g, ng.text, vocab);
    case NamedGrammar::Kind::kGbnfFile: {
      ASSIGN_OR_RETURN(std::string text, ReadFileToString(std::string(LLMHOST_SOURCE_DIR) + "/" + ng.text));
      return AddGbnf(g, text, vocab);
    }
    case NamedGrammar::Kind::kSchema:
      return AddJsonSchema(g, nlohmann::ordered_json::parse(ng.text));
    case NamedGrammar::Kind::kJsonObject:
      return AddAnyJsonObject(g);
  }
  return Status::Internal("unknown grammar kind");
}

struct Stats {
  std::vector<double> us;
  void Print(const char* label) {
    if (us.empty()) return;
    std::vector<double> s = us;
    std::sort(s.begin(), s.end());
    auto pct = [&](double p) { return s[std::min(s.size() - 1, static_cast<size_t>(p * s.size()))]; };
    double sum = 0;
    for (double x : s) sum += x;
    std::printf("    %-14s masks %6zu  avg %8.1f  p50 %8.1f  p90 %8.1f  p99 %8.1f  max %9.1f us\n", label, s.size(),
                sum / s.size(), pct(0.5), pct(0.9), pct(0.99), s.back());
  }
};

Result<std::shared_ptr<const CompiledGrammar>> CompileNamed(const NamedGrammar& ng,
                                                           std::shared_ptr<const TokenVocab> vocab) {
  Grammar g;
  ASSIGN_OR_RETURN(RuleId root, Build(ng, g, vocab.get()));
  g.SetRoot(root);
  return Compile(g, std::move(vocab));
}

// One sampled generation (the rng seeded 42 each time, so that a grammar
// takes the same path in every phase); mask times go to `stats` when given.
// False when a step failed.
bool Generate(const std::shared_ptr<const CompiledGrammar>& cg, std::mt19937* rng, int steps, Stats* stats) {
  const TokenVocab& vocab = cg->vocab();
  std::vector<uint32_t> mask(MaskWords(vocab.size()));
  std::vector<TokenId> allowed;
  Matcher m(cg);
  for (int step = 0; step < steps && !m.IsTerminated(); ++step) {
    double t0 = CpuNow();
    Status st = m.FillNextTokenMask(mask);
    double us = (CpuNow() - t0) * 1e6;
    if (!st.ok()) return false;
    if (stats) stats->us.push_back(us);
    allowed.clear();
    bool eos = false;
    for (size_t w = 0; w < mask.size(); ++w)
      for (uint32_t bits = mask[w]; bits != 0; bits &= bits - 1) {
        TokenId id = static_cast<TokenId>(w * 32 + __builtin_ctz(bits));
        if (vocab.is_eos(id)) eos = true;
        else allowed.push_back(id);
      }
    TokenId pick = (eos && (allowed.empty() || (*rng)() % 10 < 3)) ? vocab.eos_ids()[0] : allowed[(*rng)() % allowed.size()];
    if (!m.AcceptToken(pick).ok()) return false;
  }
  return true;
}

void RunGrammar(size_t index, std::shared_ptr<const TokenVocab> vocab, int gens, int steps) {
  const NamedGrammar& ng = kGrammars[index];
  std::vector<double> compile_us;
  std::shared_ptr<const CompiledGrammar> cg;
  for (int i = 0; i < 9; ++i) {
    double t0 = CpuNow();
    auto r = CompileNamed(ng, vocab);
    compile_us.push_back((CpuNow() - t0) * 1e6);
    if (!r.ok()) {
      std::printf("  %s: %s\n", ng.name, r.status().ToString().c_str());
      return;
    }
    cg = *r;
  }
  std::sort(compile_us.begin(), compile_us.end());
  std::printf("  %-14s compile p50 %.0f us\n", ng.name, compile_us[4]);

  size_t failures = 0;
  Stats cold, fresh, all;
  std::mt19937 rng(42);
  vocab->shared_masks().Clear();
  failures += !Generate(cg, &rng, steps, &cold);
  vocab->shared_masks().Clear();
  for (size_t other = 0; other < std::size(kGrammars); ++other) {
    if (other == index) continue;
    auto r = CompileNamed(kGrammars[other], vocab);
    rng.seed(42);
    if (r.ok()) Generate(*r, &rng, steps, nullptr);
  }
  auto again = CompileNamed(ng, vocab);
  rng.seed(42);
  failures += !Generate(*again, &rng, steps, &fresh);
  rng.seed(42);
  for (int gen = 0; gen < gens; ++gen) failures += !Generate(cg, &rng, steps, &all);
  cold.Print("cold vocab");
  fresh.Print("new grammar");
  all.Print("all gens");
  if (failures) std::printf("    %zu generations stopped on an error\n", failures);
}

}  // namespace

int main(int argc, char** argv) {
  std::string shared = std::string(LLMHOST_SOURCE_DIR) + "/../shared", only;
  int gens = 20, steps = 150;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--shared")) shared = argv[i + 1];
    else if (!std::strcmp(argv[i], "--gens")) gens = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
  }
  for (const char* name : {"tok_llama3.json", "tok_qwen3.json"}) {
    if (!only.empty() && only != name) continue;
    auto tok = Tokenizer::FromPath(shared + "/reference/tokenizers/" + name);
    if (!tok.ok()) {
      std::printf("%s: %s\n", name, tok.status().ToString().c_str());
      continue;
    }
    std::vector<TokenId> eos;
    for (const char* e : {"<|eot_id|>", "<|end_of_text|>", "<|im_end|>", "<|endoftext|>"})
      if (auto id = (*tok)->TokenToId(e)) eos.push_back(*id);
    double t0 = CpuNow();
    auto vocab = TokenVocab::FromTokenizer(**tok, eos);
    std::printf("%s: %zu tokens, vocabulary bytes + trie in %.0f ms\n", name, vocab->size(), (CpuNow() - t0) * 1e3);
    for (size_t i = 0; i < std::size(kGrammars); ++i) RunGrammar(i, vocab, gens, steps);
    SharedMaskCacheStats st = vocab->shared_masks().stats();
    std::printf("  shared mask cache: %zu entries, %.1f MiB\n", st.entries, st.bytes / 1048576.0);
  }
  return 0;
}
