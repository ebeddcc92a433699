#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

namespace llmhost::tok {
namespace {

// Oniguruma (Ruby syntax, Unicode) treats \s as White_Space, \d as Nd and \w
// as Alphabetic|Mark|Nd|Pc plus the Latin-1 digits-like ²³¹¼½¾ (checked
// against HF tokenizers). PCRE2 with UCP differs (its \w is L|N|_), so these
// escapes are rewritten to explicit property classes. Inside a character
// class the bracket is dropped.
constexpr const char* kWord = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{B2}\\x{B3}\\x{B9}\\x{BC}-\\x{BE}";
std::string Translate(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  int class_depth = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[i + 1];
      const char* body = nullptr;
      bool negated = false;
      switch (n) {
        case 's': body = "\\p{White_Space}"; break;
        case 'S': body = "\\p{White_Space}"; negated = true; break;
        case 'w': body = kWord; break;
        case 'W': body = kWord; negated = true; break;
        case 'd': body = "\\p{Nd}"; break;
        case 'D': body = "\\p{Nd}"; negated = true; break;
        default: break;
      }
      if (body != nullptr && class_depth == 0) {
        out += negated ? "[^" : "[";
        out += body;
        out += "]";
        ++i;
        continue;
      }
      if (body != nullptr && !negated) {  // inside [...]: splice the properties in
        out += body;
        ++i;
        continue;
      }
      if (body != nullptr && negated) {  // [^...\S...]: rare; use \P forms where single
        if (n == 'S') out += "\\P{White_Space}";
        else if (n == 'D') out += "\\P{Nd}";
        else out += "\\W";
        ++i;
        continue;
      }
      out.push_back(c);
      out.push_back(n);
      ++i;
      continue;
    }
    if (c == '[') {
      ++class_depth;
      out.push_back(c);
      // A ']' right after '[' or '[^' is literal.
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      if (i + 1 < p.size() && p[i + 1] == ']') out.push_back(p[++i]);
      continue;
    }
    if (c == ']' && class_depth > 0) --class_depth;
    out.push_back(c);
  }
  return out;
}

}  // namespace

Result<std::shared_ptr<const Regex>> Regex::Compile(std::string_view pattern) {
  std::string translated = Translate(pattern);
  int err = 0;
  PCRE2_SIZE err_off = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &err_off, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof(buf));
    return Status::InvalidArgument("regex '" + std::string(pattern) + "': " +
                                   reinterpret_cast<const char*>(buf) + " at offset " +
                                   std::to_string(err_off));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
  std::shared_ptr<Regex> re(new Regex());
  re->pattern_ = std::string(pattern);
  re->code_ = code;
  return std::shared_ptr<const Regex>(std::move(re));
}

Regex::~Regex() {
  if (code_ != nullptr) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

namespace {

// Per-thread JIT stack (grows to 8 MiB) so that backtracking-heavy patterns
// on long pieces do not hit the 32 KiB default.
struct JitContext {
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* ctx = nullptr;
  JitContext() {
    stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    ctx = pcre2_match_context_create(nullptr);
    if (stack != nullptr && ctx != nullptr) pcre2_jit_stack_assign(ctx, nullptr, stack);
  }
  ~JitContext() {
    if (ctx != nullptr) pcre2_match_context_free(ctx);
    if (stack != nullptr) pcre2_jit_stack_free(stack);
  }
};

}  // namespace

std::vector<std::pair<size_t, size_t>> Regex::FindAll(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  if (md == nullptr) return out;
  thread_local JitContext jit;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos <= text.size()) {
    int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, jit.ctx);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
      // A JIT resource limit: retry with the interpreter (heap-based).
      rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                       nullptr);
    }
    if (rc < 0) break;  // no further match (or a hard limit: the rest stays unsplit)
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t s = ov[0], e = ov[1];
    if (e < s) break;  // \K tricks; not used by tokenizers
    out.emplace_back(s, e);
    if (e == s) {
      // Empty match: step over one character.
      if (e >= text.size()) break;
      pos = e + 1;
      while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) ++pos;
    } else {
      pos = e;
    }
  }
  pcre2_match_data_free(md);
  return out;
}

std::string RegexEscape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    auto u = static_cast<unsigned char>(c);
    bool alnum = (u >= '0' && u <= '9') || ((u | 0x20) >= 'a' && (u | 0x20) <= 'z');
    if (u < 0x80 && !alnum && c != '_') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace llmhost::tok
