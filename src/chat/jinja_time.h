// Python's datetime.strftime for a naive local date/time (as strftime_now
// sees datetime.now()): C-locale names, %f from `micros`, %z/%Z empty.
#pragma once

#include <ctime>
#include <string>
#include <string_view>

namespace llmhost::jinja {

std::string PyStrftime(const std::tm& t, int micros, std::string_view fmt);

// Fills tm_wday/tm_yday (and normalises) for a civil date/time.
void NormalizeCivil(std::tm* t);

}  // namespace llmhost::jinja
