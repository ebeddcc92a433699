// Constant folding as Jinja2's optimizer does it. Folding is visible in one
// place: a slice of a constant folds through the sandbox's getitem (giving
// Undefined when the value cannot be sliced) while at run time it is a plain
// Python subscript (TypeError). Matching Jinja2 there needs the same folding.
#pragma once

#include "chat/jinja_ast.h"

namespace llmhost::jinja {

// Replaces each sub-expression whose value is known at parse time (and has a
// literal form) by a constant, and each {{ }} whose whole expression is
// constant by its text.
void FoldConstants(Program* program);

}  // namespace llmhost::jinja
