#pragma once

#include <cstdlib>
#include <cstring>

namespace llmhost::cuda {

// A kernel choice an environment variable switches, read at each call so
// that a test or a speed comparison can flip it without a rebuild: unset
// gives `by_default`; a switch that is on by default is off only at "off",
// one that is off by default on only at "on".
inline bool EnvSwitch(const char* name, bool by_default) {
  const char* v = std::getenv(name);
  if (v == nullptr) return by_default;
  return by_default ? std::strcmp(v, "off") != 0 : std::strcmp(v, "on") == 0;
}

}  // namespace llmhost::cuda
