// Columns of text on stdout, as `ls`, `ps`, `show` and `bench` print them:
// each column as wide as its widest cell, three spaces apart.
#pragma once

#include <string>
#include <vector>

namespace llmhost::cli {

void PrintTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace llmhost::cli
