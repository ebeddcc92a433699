// grammar-check: the command-line contract for grammar tests and benchmarks.
// Reads cases (a JSON Schema, regex or GBNF grammar with instance texts), one
// per line, compiles each against a tokenizer's vocabulary and walks every
// instance's tokens through the matcher, timing the compile and each mask.
//
//   in:  {"id", "schema" | "regex" | "grammar", "instances": [{"text", "valid"}]}
//   out: {"id", "compile_us", "error"?, "instances": [{"accepted", "tokens",
//         "mask_us": [...], "cold_masks": [...], "error"?}]}
//
// "valid" is not read: comparing it with "accepted" is the caller's job.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"
#include "tokenizer/tokenizer.h"
#include "util/json.h"

namespace llmhost::cli {
namespace {

using Clock = std::chrono::steady_clock;
using OrderedJson = nlohmann::ordered_json;

constexpr size_t kMaxLineBytes = size_t{16} << 20;

struct GrammarCheckOptions {
  std::string tokenizer;
  std::string cases;  // "" reads stdin
  int max_whitespace = grammar::JsonSchemaOptions{}.max_whitespace;
};

struct Case {
  std::string id;
  // A schema, or the text of a regex / GBNF grammar.
  enum class Kind { kSchema, kRegex, kGrammar } kind = Kind::kSchema;
  OrderedJson schema;
  std::string text;
  std::vector<std::string> instances;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "llmhost grammar-check: %s\n", message.c_str());
  return 1;
}

// Microseconds, rounded to 1/per_us (so that the JSON stays short).
double MicrosSince(Clock::time_point start, double per_us) {
  double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  return std::round(us * per_us) / per_us;
}

enum class LineRead { kLine, kEnd, kTooLong };

// The next line of `f` without its '\n'.
LineRead ReadLine(FILE* f, std::string* line) {
  line->clear();
  int c;
  while ((c = std::getc(f)) != EOF && c != '\n') {
    if (line->size() == kMaxLineBytes) return LineRead::kTooLong;
    line->push_back(static_cast<char>(c));
  }
  return c == EOF && line->empty() ? LineRead::kEnd : LineRead::kLine;
}

Result<Case> ParseCase(std::string_view line, const std::string& where) {
  ASSIGN_OR_RETURN(OrderedJson j, ParseOrderedJson(line, where, kMaxLineBytes));
  auto bad = [&](const std::string& what) { return Status::InvalidArgument(where + ": " + what); };
  if (!j.is_object()) return bad("expected a JSON object (one case per line)");
  Case c;
  if (!j.contains("id") || !j["id"].is_string()) return bad("\"id\" must be a string");
  c.id = j["id"].get<std::string>();
  int kinds = 0;
  for (const char* k : {"schema", "regex", "grammar"}) kinds += j.contains(k) ? 1 : 0;
  if (kinds != 1) return bad("give exactly one of \"schema\", \"regex\" or \"grammar\"");
  if (j.contains("schema")) {
    c.schema = std::move(j["schema"]);
  } else {
    const char* key = j.contains("regex") ? "regex" : "grammar";
    if (!j[key].is_string()) return bad(std::string("\"") + key + "\" must be a string");
    c.kind = j.contains("regex") ? Case::Kind::kRegex : Case::Kind::kGrammar;
    c.text = j[key].get<std::string>();
  }
  if (!j.contains("instances")) return c;
  if (!j["instances"].is_array()) return bad("\"instances\" must be an array");
  for (size_t i = 0; i < j["instances"].size(); ++i) {
    const OrderedJson& inst = j["instances"][i];
    if (!inst.is_object() || !inst.contains("text") || !inst["text"].is_string())
      return bad("instances[" + std::to_string(i) + "] must be an object with a string \"text\"");
    c.instances.push_back(inst["text"].get<std::string>());
  }
  return c;
}

// The case's grammar, compiled: what compile_us times.
Result<std::shared_ptr<const grammar::CompiledGrammar>> CompileCase(const Case& c,
                                                                    std::shared_ptr<const grammar::TokenVocab> vocab,
                                                                    int max_whitespace) {
  grammar::Grammar g;
  grammar::RuleId root = -1;
  switch (c.kind) {
    case Case::Kind::kSchema: {
      ASSIGN_OR_RETURN(root, grammar::AddJsonSchema(g, c.schema, {.max_whitespace = max_whitespace}));
      break;
    }
    case Case::Kind::kRegex: {
      ASSIGN_OR_RETURN(grammar::NodeId node, grammar::AddRegex(g, c.text));
      root = g.AddRule("regex");
      g.SetBody(root, node);
      break;
    }
    case Case::Kind::kGrammar: {
      ASSIGN_OR_RETURN(root, grammar::AddGbnf(g, c.text, vocab.get()));
      break;
    }
  }
  g.SetRoot(root);
  return grammar::Compile(g, std::move(vocab));
}

// Steps the text's tokens through a fresh matcher, asking for the mask
// before each one; stops at the first token the mask refuses.
OrderedJson CheckInstance(const std::shared_ptr<const grammar::CompiledGrammar>& compiled, const Tokenizer& tok,
                          const std::string& text) {
  const std::vector<TokenId> ids = tok.Encode(text, /*add_special=*/false);
  grammar::Matcher matcher(compiled);
  std::vector<uint32_t> mask(grammar::MaskWords(compiled->vocab().size()));
  OrderedJson mask_us = OrderedJson::array(), cold = OrderedJson::array();
  bool allowed = true;
  std::string error;
  // Stops at a token refused, or after a complete match nothing may follow.
  for (size_t i = 0; i < ids.size() && allowed && !matcher.IsTerminated(); ++i) {
    const size_t filled = compiled->cache().filled();
    const Clock::time_point start = Clock::now();
    Status st = matcher.FillNextTokenMask(mask);
    mask_us.push_back(MicrosSince(start, 100));
    if (compiled->cache().filled() != filled) cold.push_back(i);
    if (st.ok() && !grammar::MaskAllows(mask, ids[i])) {
      allowed = false;
    } else if (st.ok()) {
      st = matcher.AcceptToken(ids[i]);
    }
    if (!st.ok()) {
      error = st.message();
      allowed = false;
    }
  }
  allowed = allowed && ids.size() == mask_us.size();
  OrderedJson out;
  out["accepted"] = allowed && matcher.CanEnd();
  out["tokens"] = ids.size();
  out["mask_us"] = std::move(mask_us);
  out["cold_masks"] = std::move(cold);
  if (!error.empty()) out["error"] = error;
  return out;
}

OrderedJson CheckCase(const Case& c, std::shared_ptr<const grammar::TokenVocab> vocab, const Tokenizer& tok,
                      int max_whitespace) {
  OrderedJson out;
  out["id"] = c.id;
  const Clock::time_point start = Clock::now();
  auto compiled = CompileCase(c, std::move(vocab), max_whitespace);
  out["compile_us"] = MicrosSince(start, 10);
  if (!compiled.ok()) out["error"] = compiled.status().message();
  out["instances"] = OrderedJson::array();
  if (!compiled.ok()) return out;
  for (const std::string& text : c.instances) out["instances"].push_back(CheckInstance(*compiled, tok, text));
  return out;
}

int RunGrammarCheck(const GrammarCheckOptions& opt) {
  auto tok = Tokenizer::FromPath(opt.tokenizer);
  if (!tok.ok()) return Fail(tok.status().ToString());
  const Clock::time_point vocab_start = Clock::now();
  std::shared_ptr<const grammar::TokenVocab> vocab = grammar::TokenVocab::FromTokenizer(**tok, {});
  std::fprintf(stderr, "llmhost grammar-check: vocabulary of %zu tokens built in %.1f ms\n", vocab->size(),
               MicrosSince(vocab_start, 1) / 1000);

  std::unique_ptr<FILE, int (*)(FILE*)> file(nullptr, &std::fclose);
  if (!opt.cases.empty()) {
    file.reset(std::fopen(opt.cases.c_str(), "rb"));
    if (!file) return Fail("--cases: cannot open " + opt.cases);
  }
  FILE* in = file ? file.get() : stdin;
  const std::string source = opt.cases.empty() ? "stdin" : opt.cases;
  std::string line;
  for (size_t line_no = 1;; ++line_no) {
    const std::string where = source + ":" + std::to_string(line_no);
    LineRead r = ReadLine(in, &line);
    if (r == LineRead::kEnd) break;
    if (r == LineRead::kTooLong) return Fail(where + ": longer than " + std::to_string(kMaxLineBytes) + " bytes");
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Result<Case> c = ParseCase(line, where);
    if (!c.ok()) return Fail(c.status().message());
    std::string out =
        CheckCase(*c, vocab, **tok, opt.max_whitespace).dump(-1, ' ', false, OrderedJson::error_handler_t::replace) +
        "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }
  if (std::ferror(in)) return Fail(source + ": read error");
  return 0;
}

}  // namespace

void RegisterGrammarCheckCommands(CLI::App& app) {
  auto opt = std::make_shared<GrammarCheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "grammar-check", "Compile grammar cases (JSON lines) against a vocabulary and time each token mask");
  cmd->add_option("--tokenizer", opt->tokenizer, "tokenizer.json, GGUF file, or model directory")->required();
  cmd->add_option("--cases", opt->cases, "JSON-lines file of cases (default: stdin)");
  cmd->add_option("--max-whitespace", opt->max_whitespace,
                  "Longest whitespace run a schema accepts between JSON tokens (-1: any)")
      ->check(CLI::Range(-1, 1 << 20))
      ->capture_default_str();
  cmd->callback([opt]() { ExitCode() = RunGrammarCheck(*opt); });
}

}  // namespace llmhost::cli
