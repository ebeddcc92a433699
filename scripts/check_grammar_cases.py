#!/usr/bin/env python3
"""Checks the labels of tests/data/grammar/cases.jsonl against independent validators.

Schema cases: each instance's "valid" must equal what Draft 2020-12 validation says
(Debian's python3-jsonschema, format checking on; a text that is not JSON is invalid).
Formats the Debian package cannot check without extra modules (date-time, time,
duration, hostname) get checkers written here from their RFCs. OpenAPI's
`nullable: true`, which Draft 2020-12 does not know, is read as adding "null" to `type`.
Regex cases: Python's re.fullmatch (the suite keeps to the syntax both dialects share).
Cases that expect a compile error ("error") have no instances to check.

Usage: scripts/check_grammar_cases.py [tests/data/grammar/cases.jsonl]
(run with Debian's /usr/bin/python3: apt-get install python3-jsonschema python3-rfc3987)
"""
import datetime
import json
import re
import sys

try:
    import jsonschema
except ImportError:
    print("check_grammar_cases: python3-jsonschema is not installed: skipped")
    sys.exit(77)

DATE = r"(\d{4})-(\d{2})-(\d{2})"
TIME = r"(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))"


def valid_date(y, m, d):
    try:
        datetime.date(int(y), int(m), int(d))
        return True
    except ValueError:
        return False


def valid_time(h, mi, s, off_h, off_m):
    if int(h) > 23 or int(mi) > 59 or int(s) > 60:
        return False
    return off_h is None or (int(off_h) <= 23 and int(off_m) <= 59)


def check_time(text):
    m = re.fullmatch(TIME, text, re.ASCII)
    return bool(m) and valid_time(m[1], m[2], m[3], m[6], m[7])


def check_date_time(text):
    m = re.fullmatch(DATE + "[Tt]" + TIME, text, re.ASCII)
    return bool(m) and valid_date(m[1], m[2], m[3]) and valid_time(m[4], m[5], m[6], m[9], m[10])


# RFC 3339 appendix A, transcribed.
DURATION = re.compile(
    r"P(?:(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)(?:T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S))?"
    r"|T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)|\d+W)", re.ASCII)


def check_hostname(text):
    # RFC 1123: labels of 1-63 letters, digits, hyphens, not starting or ending
    # with a hyphen; at most 253 octets.
    if not text or len(text) > 253:
        return False
    label = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?", re.ASCII)
    return all(len(part) <= 63 and label.fullmatch(part) for part in text.split("."))


def format_checker():
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    extra = {
        "date-time": check_date_time,
        "time": check_time,
        "duration": lambda t: DURATION.fullmatch(t) is not None,
        "hostname": check_hostname,
    }
    for name, fn in extra.items():
        if name not in checker.checkers:
            checker.checks(name)(lambda inst, fn=fn: not isinstance(inst, str) or fn(inst))
    return checker


def reject_constant(name):
    raise json.JSONDecodeError(f"{name} is not JSON", name, 0)


def openapi_nullable(schema):
    """A copy of schema with `nullable: true` folded into `type`."""
    if isinstance(schema, list):
        return [openapi_nullable(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: openapi_nullable(v) for k, v in schema.items()}
    if out.pop("nullable", False) is True and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = types + (["null"] if "null" not in types else [])
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/data/grammar/cases.jsonl"
    checker = format_checker()
    bad = 0
    counted = 0
    for line_no, line in enumerate(open(path, encoding="utf-8"), 1):
        case = json.loads(line)
        if "error" in case:
            continue
        if "schema" in case:
            validator = jsonschema.Draft202012Validator(openapi_nullable(case["schema"]), format_checker=checker)
        for inst in case["instances"]:
            counted += 1
            text = inst["text"]
            if "schema" in case:
                try:
                    value = json.loads(text, parse_constant=reject_constant)
                    truth = validator.is_valid(value)
                except json.JSONDecodeError:
                    truth = False
            else:
                truth = re.fullmatch(case["regex"], text) is not None
            if truth != inst["valid"]:
                bad += 1
                print(f"line {line_no} {case['id']}: {text!r} labelled {inst['valid']}, validator says {truth}")
    print(f"{counted - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
