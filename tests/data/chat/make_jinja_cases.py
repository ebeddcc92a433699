#!/usr/bin/env python3
"""Regenerates jinja_cases.json: template snippets rendered by real Jinja2
(3.1.x) configured as Hugging Face transformers configures it
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loop controls,
{% generation %}, tojson, raise_exception, strftime_now pinned to
2024-07-26 12:00). The C++ engine must reproduce each `rendered`, or fail
where Jinja2 raised (`error`).

    python3 make_jinja_cases.py cases.txt [more.txt ...] > jinja_cases.json

Input: snippets separated by a line "=====". Needs `pip install jinja2`.
"""
import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime(2024, 7, 26, 12, 0, 0).strftime(fmt)


ENV = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
ENV.filters["tojson"] = tojson
ENV.globals["raise_exception"] = raise_exception
ENV.globals["strftime_now"] = strftime_now

KWARGS = {
    "s": "Hello World", "n": 5, "neg": -7, "f": 2.5, "l": [3, 1, 2], "d": {"b": 1, "a": 2},
    "u": "ünïcode ΣΑΣ 日本 👍", "e": "", "none": None, "t": True, "fa": False,
    "items": [{"name": "x", "v": 2, "tags": ["a"]}, {"name": "Y", "v": 1}, {"name": "b", "v": 3, "tags": []}],
    "nested": {"a": {"b": [1, {"c": "deep"}]}}, "ws": "  pad\t\n", "big": 12345678901,
    "fl": [0.1, 1e-05, 1e16, 1.0, 123456789.125],
    "mixed": [1, "a", None, True, 2.5, [1], {"k": "v"}], "quote": "it's \"q\" \\ <b>&",
}
MESSAGES = [
    {"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "yo", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
    {"role": "user", "content": [{"type": "text", "text": "part"}]},
]


def main():
    cases = []
    for path in sys.argv[1:]:
        for src in open(path, encoding="utf-8").read().split("\n=====\n"):
            if not src.strip():
                continue
            case = {"template": src}
            try:
                case["rendered"] = ENV.from_string(src).render(
                    messages=MESSAGES, tools=None, documents=None, add_generation_prompt=True,
                    bos_token="<s>", eos_token="</s>", **KWARGS)
            except Exception as e:  # noqa: BLE001 - any Jinja2 failure is an expected error
                case["error"] = "%s: %s" % (type(e).__name__, e)
            cases.append(case)
    json.dump({"generator": "Jinja2 %s" % jinja2.__version__, "conversation": {"messages": MESSAGES, "kwargs": KWARGS},
               "bos_token": "<s>", "eos_token": "</s>", "cases": cases}, sys.stdout, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
