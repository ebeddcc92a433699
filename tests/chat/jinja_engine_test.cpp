// Focused tests of the Jinja engine: expressions, filters, whitespace
// control, loops, macros, the sandbox and the limits. Expected strings are
// what Jinja2 3.1 renders with transformers' environment (checked with it).
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "test_util.h"

namespace llmhost::jinja_engine_test {
namespace {

using nlohmann::ordered_json;

Result<std::string> RenderWith(const std::string& src, ordered_json kwargs = ordered_json::object(),
                               const jinja::RenderLimits& limits = jinja::RenderLimits()) {
  auto tmpl = ChatTemplate::Parse(src);
  if (!tmpl.ok()) return tmpl.status();
  ChatTemplateInput in;
  in.kwargs = std::move(kwargs);
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  return tmpl->Render(in, limits);
}

std::string R(const std::string& src, ordered_json kwargs = ordered_json::object()) {
  auto out = RenderWith(src, std::move(kwargs));
  return out.ok() ? *out : "ERROR " + out.status().ToString();
}

bool Fails(const std::string& src, const std::string& expect_in_message = "") {
  auto out = RenderWith(src);
  if (out.ok()) return false;
  return out.status().message().find(expect_in_message) != std::string::npos;
}

TEST(JinjaExpressions, ArithmeticFollowsPython) {
  EXPECT_EQ(R("{{ 1/2 }} {{ 4/2 }} {{ 7//2 }} {{ -7//2 }} {{ -7 % 3 }} {{ 2**10 }} {{ 2**-1 }} {{ 2**3**2 }}"),
            "0.5 2.0 3 -4 2 1024 0.5 64");
  EXPECT_EQ(R("{{ 1e5 }} {{ 1e16 }} {{ 0.1+0.2 }} {{ 1.5e-5 }} {{ 1_000 }} {{ 0x1F }}"),
            "100000.0 1e+16 0.30000000000000004 1.5e-05 1000 31");
  EXPECT_EQ(R("{{ 'a' ~ 1 ~ none ~ true }}|{{ [1] + [2] }}|{{ 'ab' * 3 }}|{{ -2 ** 2 }}"), "a1NoneTrue|[1, 2]|ababab|4");
  EXPECT_EQ(R("{{ '%s-%d' % ('a', 3) }}|{{ '%5.2f|%-4d|%x' % (3.14159, 7, 255) }}"), "a-3| 3.14|7   |ff");
}

TEST(JinjaExpressions, PythonStrOfValues) {
  EXPECT_EQ(R("{{ [1, 'a', none, true, 2.5, [1], {'k': 'v'}] }}"), "[1, 'a', None, True, 2.5, [1], {'k': 'v'}]");
  EXPECT_EQ(R("{{ [\"it's\"] }}|{{ (1,) }}|{{ (1, 2) }}|{{ 1, 2 }}|{{ () }}"), "[\"it's\"]|(1,)|(1, 2)|(1, 2)|()");
  EXPECT_EQ(R("{{ {'a': 1}.items() }}|{{ range(3) }}"), "dict_items([('a', 1)])|range(0, 3)");
}

TEST(JinjaExpressions, ComparisonsAndLogic) {
  EXPECT_EQ(R("{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ 1 == 1.0 }}|{{ [1,2] == (1,2) }}|{{ 'a' in 'cat' }}|{{ 2 not in [1] }}"),
            "True|False|True|False|True|True");
  EXPECT_EQ(R("{{ true and 'yes' }}|{{ false or 'no' }}|{{ 'x' if false }}|{{ 1 if false else 2 }}"), "yes|no||2");
  EXPECT_TRUE(Fails("{{ 1 < 'a' }}", "TypeError"));
  EXPECT_TRUE(Fails("{{ 'a' + 1 }}", "TypeError"));
  EXPECT_TRUE(Fails("{{ 1 in none }}", "TypeError"));
}

TEST(JinjaExpressions, StringsSliceByCodePoint) {
  ordered_json kw = {{"u", "ünï日本👍"}};
  EXPECT_EQ(R("{{ u[0] }}|{{ u[-1] }}|{{ u[1:3] }}|{{ u[::-1] }}|{{ u|length }}", kw), "ü|👍|nï|👍本日ïnü|6");
  EXPECT_EQ(R("{{ 'Hello'[::2] }}|{{ [1,2,3][1:] }}|{{ [1,2,3][:-1] }}|{{ [1,2,3][::-1] }}"), "Hlo|[2, 3]|[1, 2]|[3, 2, 1]");
}

TEST(JinjaExpressions, StringLiteralEscapes) {
  EXPECT_EQ(R("{{ 'tab\\there' }}|{{ '\\u00e9\\x41' }}|{{ \"a\" 'b' }}|{{ 'unk\\d' }}"), "tab\there|éA|ab|unk\\d");
}

TEST(JinjaFilters, Common) {
  ordered_json kw = {{"l", {3, 1, 2}}, {"d", {{"b", 1}, {"a", 2}}}};
  EXPECT_EQ(R("{{ l|join(',') }}|{{ l|sort }}|{{ l|reverse|list }}|{{ l|first }}|{{ l|last }}|{{ l|length }}|{{ l|sum }}",
              kw),
            "3,1,2|[1, 2, 3]|[2, 1, 3]|3|2|3|6");
  EXPECT_EQ(R("{{ d|dictsort }}|{{ d|items|list }}|{{ d|tojson }}|{{ d|tojson(indent=2) }}", kw),
            "[('a', 2), ('b', 1)]|[('b', 1), ('a', 2)]|{\"b\": 1, \"a\": 2}|{\n  \"b\": 1,\n  \"a\": 2\n}");
  EXPECT_EQ(R("{{ '  x  '|trim }}|{{ 'ab'|upper }}|{{ 'hello-world foo'|title }}|{{ 'hELLO'|capitalize }}"),
            "x|AB|Hello-World Foo|Hello");
  EXPECT_EQ(R("{{ missing|default('d') }}|{{ ''|default('e', true) }}|{{ none|default('x') }}"), "d|e|None");
  EXPECT_EQ(R("{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}"), "a\n  b\n\n  c|  a\n  b");
  EXPECT_EQ(R("{{ 2.675|round(2) }}|{{ 42.5|round }}|{{ 43.5|round }}|{{ '3.7'|int }}|{{ 'x'|int }}|{{ '1e3'|float }}"),
            "2.67|42.0|44.0|3|0|1000.0");
}

TEST(JinjaFilters, SelectMapAndTests) {
  ordered_json kw = {{"items", {{{"name", "x"}, {"v", 2}}, {{"name", "Y"}, {"v", 1}}}}};
  EXPECT_EQ(R("{{ items|selectattr('v', 'gt', 1)|map(attribute='name')|list }}", kw), "['x']");
  EXPECT_EQ(R("{{ items|sort(attribute='name')|map(attribute='name')|join }}", kw), "xY");
  EXPECT_EQ(R("{{ [1,2,3]|select('odd')|list }}|{{ ['a','B']|map('upper')|list }}|{{ [0,'',1]|reject|list }}"),
            "[1, 3]|['A', 'B']|[0, '']");
  EXPECT_EQ(R("{{ 5 is odd }}|{{ 5 is divisibleby 5 }}|{{ 'x' is string }}|{{ {} is mapping }}|{{ none is none }}"),
            "True|True|True|True|True");
}

TEST(JinjaFilters, TojsonMatchesPythonJsonDumps) {
  ordered_json kw = {{"v", {{"u", "é\n\"日"}, {"f", {0.1, 1e-05, 1e16, 1.0}}, {"n", nullptr}, {"b", true}}}};
  EXPECT_EQ(R("{{ v|tojson }}", kw),
            "{\"u\": \"é\\n\\\"日\", \"f\": [0.1, 1e-05, 1e+16, 1.0], \"n\": null, \"b\": true}");
  EXPECT_EQ(R("{{ 'é'|tojson(ensure_ascii=true) }}|{{ [1,2]|tojson(separators=(',', ':')) }}"), "\"\\u00e9\"|[1,2]");
  EXPECT_TRUE(Fails("{{ missing|tojson }}", "not JSON serializable"));
  EXPECT_TRUE(Fails("{{ [1]|map('string')|tojson }}", "generator"));
}

TEST(JinjaWhitespace, TrimAndLstripBlocks) {
  EXPECT_EQ(R("  {% if true %}\n    yes\n  {% endif %}\nend"), "    yes\nend");
  EXPECT_EQ(R("  {%- if true -%}\n    yes\n  {%- endif -%}\n  end"), "yesend");
  EXPECT_EQ(R("line1\n{% for x in [1, 2] %}\n  - {{ x }}\n{% endfor %}\nline2"), "line1\n  - 1\n  - 2\nline2");
  EXPECT_EQ(R("a  {%+ if true +%}  \nb{% endif %}"), "a    \nb");
  EXPECT_EQ(R("{# c #}a{#- t -#}  b"), "ab");
  EXPECT_EQ(R("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
  EXPECT_EQ(R("x\n"), "x");      // one trailing newline dropped
  EXPECT_EQ(R("x\n\n"), "x\n");
  EXPECT_EQ(R("a\r\nb"), "a\nb");  // newlines normalised
}

TEST(JinjaLoops, LoopVariablesAndControl) {
  EXPECT_EQ(R("{% for x in [3,1,2] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}"
              "{{ loop.length }}|{% endfor %}"),
            "103TrueFalse3|212FalseFalse3|321FalseTrue3|");
  EXPECT_EQ(R("{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }}-{{ loop.cycle('a','b') }},{% endfor %}"),
            "-2-a,1-3-b,2--a,");
  EXPECT_EQ(R("{% for x in [3,1,2] if x > 1 %}{{ x }}{{ loop.length }}{% else %}e{% endfor %}|"
              "{% for x in [] %}x{% else %}empty{% endfor %}"),
            "3222|empty");
  EXPECT_EQ(R("{% for x in [3,1,2] %}{% if x == 1 %}{% break %}{% endif %}{{ x }}{% endfor %}|"
              "{% for x in [3,1,2] %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% endfor %}"),
            "3|32");
  EXPECT_EQ(R("{% for x in [[1, [2]], [3]] recursive %}[{% if x is iterable %}{{ loop(x) }}{% else %}{{ x }}@"
              "{{ loop.depth }}{% endif %}]{% endfor %}"),
            "[[1@2][[2@3]]][[3@2]]");
}

TEST(JinjaScoping, LoopsDoNotLeakAssignmentsNamespacesDo) {
  EXPECT_EQ(R("{% set x = 0 %}{% for i in range(3) %}{{ x }}{% set x = i %}{{ x }}|{% endfor %}{{ x }}"),
            "00|01|02|0");
  EXPECT_EQ(R("{% set ns = namespace(a=1) %}{% for i in range(3) %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }}|{{ ns }}"),
            "4|<Namespace {'a': 4}>");
  EXPECT_EQ(R("{% set a = 1 %}{% if true %}{% set a = 2 %}{% endif %}{{ a }}"), "2");
  EXPECT_EQ(R("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set y %}block{% endset %}{{ y }}"), "12block");
  EXPECT_TRUE(Fails("{% set x.y = 1 %}", "non-namespace"));
}

TEST(JinjaMacros, DefaultsVarargsKwargsCaller) {
  EXPECT_EQ(R("{% macro m(a, b=2, c='x') %}[{{ a }}|{{ b }}|{{ c }}]{% endmacro %}{{ m(1) }}{{ m(1, 3) }}{{ m(1, c='y') }}{{ m() }}"),
            "[1|2|x][1|3|x][1|2|y][|2|x]");
  EXPECT_EQ(R("{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}"), "1(2,){'k': 3}");
  EXPECT_EQ(R("{% macro l(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}"
              "{% call(x) l([1,2]) %}[{{ x }}]{% endcall %}"),
            "[1][2]");
  EXPECT_TRUE(Fails("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", "TypeError"));
  EXPECT_TRUE(Fails("{% macro m(a) %}{% endmacro %}{{ m(1, z=2) }}", "TypeError"));
}

TEST(JinjaMethods, StrDictListMethods) {
  EXPECT_EQ(R("{{ '  a  b  c '.split(None, 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}|{{ 'Hello'.startswith(('x', 'He')) }}"),
            "['a', 'b  c ']|['a,b', 'c']|True");
  EXPECT_EQ(R("{{ 'xyxay'.strip('xy') }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'ab'.center(6, '*') }}|{{ '{:>4}|{}'.format('a', 1.5) }}"),
            "a|bba|**ab**|   a|1.5");
  EXPECT_EQ(R("{{ {'a': 1}.get('a') }}|{{ {'a': 1}.get('z', 9) }}|{{ [3, 1].index(1) }}|{{ [1, 1].count(1) }}"),
            "1|9|1|2");
}

TEST(JinjaUndefined, DefaultUndefinedSemantics) {
  EXPECT_EQ(R("[{{ missing }}]{{ missing is defined }}{{ missing|length }}{{ not missing }}{% for x in missing %}x{% endfor %}"),
            "[]False0True");
  EXPECT_EQ(R("[{{ {'a': 1}.b }}][{{ none.x }}][{{ [1][5] }}]"), "[][][]");
  EXPECT_TRUE(Fails("{{ missing.attr }}", "UndefinedError"));
  EXPECT_TRUE(Fails("{{ missing + 1 }}", "UndefinedError"));
  EXPECT_TRUE(Fails("{{ missing() }}", "UndefinedError"));
}

TEST(JinjaSandbox, MutatingMethodsAreSecurityErrors) {
  EXPECT_TRUE(Fails("{% set l = [1] %}{{ l.append(2) }}", "SecurityError"));
  EXPECT_TRUE(Fails("{% set d = {} %}{{ d.update({'x': 1}) }}", "SecurityError"));
  EXPECT_TRUE(Fails("{{ {'a': 1}.pop('a') }}", "SecurityError"));
  EXPECT_TRUE(Fails("{{ 'x'.__class__.__mro__ }}", "SecurityError"));
  // Merely naming the blocked method renders as empty, as in Jinja2.
  EXPECT_EQ(R("{% set l = [1] %}{{ l.append }}x"), "x");
}

TEST(JinjaSandbox, MarkupEscapesPlainStrings) {
  EXPECT_EQ(R("{{ '<a>'|safe + '<b>' }}|{{ '<a>' + '<b>'|safe }}|{{ '<a>'|safe ~ '<b>' }}|{{ '<b>'|e }}"),
            "<a>&lt;b&gt;|&lt;a&gt;<b>|<a><b>|&lt;b&gt;");
}

TEST(JinjaErrors, SyntaxErrorsCarryLineNumbers) {
  auto t = ChatTemplate::Parse("line1\n{% if %}");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("line 2"), std::string::npos) << t.status().ToString();
  EXPECT_FALSE(ChatTemplate::Parse("{% for x in y %}no end").ok());
  EXPECT_FALSE(ChatTemplate::Parse("{{ (1, 2 }}").ok());
  EXPECT_FALSE(ChatTemplate::Parse("{% include 'x' %}").ok());
  EXPECT_FALSE(ChatTemplate::Parse("{{ x|no_such_filter }}").ok());
  EXPECT_FALSE(ChatTemplate::Parse("{% break %}").ok());
  // Unknown filters inside an if block fail only when executed, as in Jinja2.
  EXPECT_EQ(R("{% if false %}{{ x|no_such_filter }}{% endif %}ok"), "ok");
  auto r = RenderWith("a\nb\n{{ raise_exception('boom') }}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("boom"), std::string::npos);
  EXPECT_NE(r.status().message().find("line 3"), std::string::npos);
}

// A hang would show as a ctest timeout; the assertions check the error kind.
TEST(JinjaLimits, HugeLoopsFailFast) {
  EXPECT_TRUE(Fails("{% for i in range(100000000) %}{% endfor %}", "Range too big"));
  // Nested loops within the sandbox's range limit run out of steps instead.
  jinja::RenderLimits limits;
  limits.max_steps = 2'000'000;
  auto r = RenderWith("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                      ordered_json::object(), limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
}

TEST(JinjaLimits, InfiniteRecursionFails) {
  auto r = RenderWith("{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
  EXPECT_FALSE(RenderWith("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}").ok());
}

TEST(JinjaLimits, OutputAndValueSizesAreBounded) {
  EXPECT_TRUE(Fails("{{ 'x' * 1000000000 }}", "too large"));
  EXPECT_TRUE(Fails("{% set ns = namespace(s='xx') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                    "too large"));
  jinja::RenderLimits limits;
  limits.max_output = 1000;
  auto r = RenderWith("{% for i in range(1000) %}0123456789{% endfor %}", ordered_json::object(), limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
}

TEST(JinjaLimits, DeepNestingIsRejected) {
  std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_FALSE(ChatTemplate::Parse(deep).ok());
  std::string deep_list = "{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}";
  EXPECT_FALSE(ChatTemplate::Parse(deep_list).ok());
  EXPECT_FALSE(RenderWith("{% set ns = namespace(x=1) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}").ok());
  // Deep statements and expressions inside deep recursion: an error, not a
  // stack overflow.
  std::string ifs, endifs;
  for (int i = 0; i < 90; ++i) {
    ifs += "{% if true %}";
    endifs += "{% endif %}";
  }
  std::string parens;
  for (int i = 0; i < 60; ++i) parens += "(1 + ";
  parens += "m(n + 1)|int" + std::string(60, ')');
  auto r = RenderWith("{% macro m(n) %}" + ifs + "{{ " + parens + " }}" + endifs + "{% endmacro %}{{ m(0) }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
  // A namespace may hold itself, as in Jinja2; printing shows the cycle.
  EXPECT_EQ(R("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"), "<Namespace {'me': <Namespace {...}>}>");
}

TEST(JinjaConcurrency, OneTemplateRendersOnManyThreads) {
  auto tmpl = ChatTemplate::Parse("{% for m in messages %}{{ m.role }}:{{ m.content|upper }};{% endfor %}");
  ASSERT_TRUE(tmpl.ok());
  ChatTemplateInput in;
  in.messages = ordered_json::parse(R"([{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}])");
  std::vector<std::thread> threads;
  std::vector<int> ok(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        auto r = tmpl->Render(in);
        ok[t] += r.ok() && *r == "user:HI;assistant:YO;";
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int n : ok) EXPECT_EQ(n, 200);
}

}  // namespace
}  // namespace llmhost::jinja_engine_test
