#include "chat/jinja_time.h"

#include <locale.h>

#include <cstdio>

namespace llmhost::jinja {

void NormalizeCivil(std::tm* t) {
  t->tm_isdst = 0;
  time_t secs = timegm(t);  // treats the fields as UTC: only normalises them
  gmtime_r(&secs, t);
}

std::string PyStrftime(const std::tm& t, int micros, std::string_view fmt) {
  static locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(0));
  std::string out;
  size_t i = 0;
  while (i < fmt.size()) {
    char c = fmt[i];
    if (c != '%' || i + 1 >= fmt.size()) {
      out.push_back(c);
      ++i;
      continue;
    }
    // One directive, possibly with glibc flags/width ("%-d", "%02d", "%Ey").
    size_t j = i + 1;
    while (j < fmt.size() && (fmt[j] == '-' || fmt[j] == '_' || fmt[j] == '0' || fmt[j] == '^' || fmt[j] == '#')) ++j;
    while (j < fmt.size() && j - i < 8 && fmt[j] >= '0' && fmt[j] <= '9') ++j;
    while (j < fmt.size() && (fmt[j] == 'E' || fmt[j] == 'O')) ++j;
    if (j >= fmt.size()) {
      out.append(fmt.substr(i));
      break;
    }
    char conv = fmt[j];
    std::string directive(fmt.substr(i, j - i + 1));
    i = j + 1;
    if (directive == "%%") {
      out.push_back('%');
      continue;
    }
    if (directive == "%f") {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "%06d", micros);
      out += buf;
      continue;
    }
    if (directive == "%z" || directive == "%Z") continue;  // naive datetime
    (void)conv;
    char buf[256];
    size_t n = strftime_l(buf, sizeof(buf), directive.c_str(), &t, c_locale);
    out.append(buf, n);
  }
  return out;
}

}  // namespace llmhost::jinja
