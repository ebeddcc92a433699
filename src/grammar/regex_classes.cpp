#include "grammar/regex_classes.h"

namespace llmhost::grammar {

CodepointSet RegexDigits() { return CodepointSet::Of('0', '9'); }

CodepointSet RegexWordChars() {
  CodepointSet s = CodepointSet::Of('0', '9');
  s.Add('A', 'Z');
  s.Add('a', 'z');
  s.Add('_', '_');
  return s;
}

CodepointSet RegexWhitespace() {
  CodepointSet s = CodepointSet::Of('\t', '\r');  // \t \n \v \f \r
  s.Add(' ', ' ');
  s.Add(0xA0, 0xA0);
  s.Add(0x1680, 0x1680);
  s.Add(0x2000, 0x200A);
  s.Add(0x2028, 0x2029);
  s.Add(0x202F, 0x202F);
  s.Add(0x205F, 0x205F);
  s.Add(0x3000, 0x3000);
  s.Add(0xFEFF, 0xFEFF);
  return s;
}

CodepointSet RegexDot() {
  CodepointSet terminators = CodepointSet::Of('\n', '\n');
  terminators.Add('\r', '\r');
  terminators.Add(0x2028, 0x2029);
  return CodepointSet::All().Minus(terminators);
}

}  // namespace llmhost::grammar
