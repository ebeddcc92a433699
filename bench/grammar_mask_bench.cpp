// Token-mask speed of the grammar layer on real vocabularies.
//
//   build/bench/grammar_mask_bench [--shared DIR] [--gens 20] [--steps 150] [--only tok_llama3.json]
//
// For Llama-3 (128K) and Qwen3 (152K) and a few GBNF grammars: the compile
// time (median of 9, each with a fresh mask cache), then sampled
// generations: at each step fill the mask, pick a pseudo-random allowed
// token (EOS with probability 0.3 where allowed), accept it. Prints the
// per-mask time distribution of the first generation (a cold cache) and of
// all of them. Times are the thread's CPU time (the machine is shared).
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/token_vocab.h"
#include "tokenizer/tokenizer.h"

using namespace llmhost;
using namespace llmhost::grammar;

namespace {

double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct NamedGrammar {
  const char* name;
  const char* gbnf;
};

const NamedGrammar kGrammars[] = {
    {"json", R"(root ::= object
value ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( [0-9] | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,4} )?
ws ::= [ \t\n]{0,4}
)"},
    {"object-schema", R"(root ::= "{" ws "\"name\"" ws ":" ws string ws "," ws "\"age\"" ws ":" ws integer ws "," ws "\"tags\"" ws ":" ws "[" ws ( string ws ( "," ws string ws )* )? "]" ws "," ws "\"active\"" ws ":" ws ( "true" | "false" ) ws "}"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
ws ::= [ \t\n]{0,4}
)"},
    {"brackets", R"(root ::= list
list ::= "[" ( item ( "," item )* )? "]"
item ::= list | [a-z]+
)"},
    {"quoted-text", R"(root ::= "\"" [^"]* "\"")"},
};

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

void RunGrammar(const NamedGrammar& ng, std::shared_ptr<const TokenVocab> vocab, int gens, int steps) {
  Grammar g;
  auto root = AddGbnf(g, ng.gbnf, vocab.get());
  if (!root.ok()) {
    std::printf("  %s: %s\n", ng.name, root.status().ToString().c_str());
    return;
  }
  g.SetRoot(*root);
  std::vector<double> compile_us;
  std::shared_ptr<const CompiledGrammar> cg;
  for (int i = 0; i < 9; ++i) {
    double t0 = CpuNow();
    auto r = Compile(g, vocab);
    compile_us.push_back((CpuNow() - t0) * 1e6);
    if (!r.ok()) {
      std::printf("  %s: %s\n", ng.name, r.status().ToString().c_str());
      return;
    }
    cg = *r;
  }
  std::sort(compile_us.begin(), compile_us.end());
  std::printf("  %-14s compile p50 %.0f us\n", ng.name, compile_us[4]);

  std::mt19937 rng(42);
  Stats cold, all;
  size_t tokens = 0, failures = 0;
  std::vector<uint32_t> mask(MaskWords(vocab->size()));
  std::vector<TokenId> allowed;
  for (int gen = 0; gen < gens; ++gen) {
    Matcher m(cg);
    for (int step = 0; step < steps && !m.IsTerminated(); ++step) {
      double t0 = CpuNow();
      Status st = m.FillNextTokenMask(mask);
      double us = (CpuNow() - t0) * 1e6;
      if (!st.ok()) {
        ++failures;
        break;
      }
      all.us.push_back(us);
      if (gen == 0) cold.us.push_back(us);
      allowed.clear();
      bool eos = false;
      for (size_t w = 0; w < mask.size(); ++w)
        for (uint32_t bits = mask[w]; bits != 0; bits &= bits - 1) {
          TokenId id = static_cast<TokenId>(w * 32 + __builtin_ctz(bits));
          if (vocab->is_eos(id)) eos = true;
          else allowed.push_back(id);
        }
      TokenId pick = (eos && (allowed.empty() || rng() % 10 < 3)) ? vocab->eos_ids()[0] : allowed[rng() % allowed.size()];
      if (!m.AcceptToken(pick).ok()) {
        ++failures;
        break;
      }
      ++tokens;
    }
  }
  cold.Print("first gen");
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
    for (const NamedGrammar& g : kGrammars) RunGrammar(g, vocab, gens, steps);
  }
  return 0;
}
