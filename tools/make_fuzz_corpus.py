#!/usr/bin/env python3
"""Seed corpora for the fuzz targets (tests/fuzz/corpus/<target>/): small real inputs of each
kind, from which libFuzzer mutates. GGUF files come from `brisk gen-model` and the gguf
package, safetensors from the safetensors package, HF directories from gen-model's output,
templates and messages from tests/golden/templates, requests written as clients send them.

    python3 tools/make_fuzz_corpus.py --brisk build/brisk
"""
import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/fuzz/corpus"
SEP = "\n%%\n"


def write(target, name, data):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def gguf_seeds(brisk, tmp):
    import gguf
    path = tmp / "tiny.gguf"
    subprocess.run([brisk, "gen-model", "--arch", "llama", "--size", "tiny", "--dtype", "q8_0", "--seed", "1", str(path)],
                   check=True, stdout=subprocess.DEVNULL)
    write("gguf", "llama_tiny_q8_0.gguf", path.read_bytes())
    # Metadata only, with a tokenizer and a chat template: the reader's and loaders' paths.
    w = gguf.GGUFWriter(str(tmp / "meta.gguf"), "qwen2")
    w.add_context_length(64)
    w.add_embedding_length(8)
    w.add_block_count(1)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_feed_forward_length(16)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(["a", "b", "ab", "<|im_end|>"])
    w.add_token_types([1, 1, 1, 3])
    w.add_token_merges(["a b"])
    w.add_eos_token_id(3)
    w.add_chat_template("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}")
    w.add_tensor("token_embd.weight", np.ones((4, 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    write("gguf", "qwen2_metadata.gguf", (tmp / "meta.gguf").read_bytes())


def safetensors_seeds():
    from safetensors.numpy import save
    write("safetensors", "three_dtypes.safetensors", save({
        "a": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b": np.ones((4,), dtype=np.float16),
        "c": np.zeros((1, 1, 2), dtype=np.int32)}, metadata={"format": "pt"}))
    write("safetensors", "empty.safetensors", save({}))


def hf_dir_seeds(brisk, tmp):
    d = tmp / "hf"
    subprocess.run([brisk, "gen-model", "--arch", "qwen3", "--size", "tiny", "--dtype", "bf16", "--format", "hf",
                    "--seed", "1", str(d)], check=True, stdout=subprocess.DEVNULL)
    index = json.dumps({"metadata": {"total_size": 8}, "weight_map": {"model.embed_tokens.weight": "model.safetensors"}})
    write("hf_dir", "qwen3_tiny", (d / "config.json").read_text() + SEP + index + SEP + (d / "tokenizer.json").read_text())


def tokenizer_seeds():
    texts = []
    for line in (ROOT / "tests/golden/tokenizer/corpus.jsonl").read_text().splitlines():
        try:
            texts.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    for i, text in enumerate(texts[:: max(1, len(texts) // 24)][:24]):
        write("tokenizer", f"line{i:02d}", text if isinstance(text, str) else json.dumps(text))


def template_seeds():
    renders = json.loads((ROOT / "tests/golden/templates/renders.json").read_text())
    seen = set()
    for r in renders:
        key = (r["template"], r["case"])
        if key in seen:
            continue
        seen.add(key)
        source = (ROOT / "tests/golden/templates" / f"{r['template']}.jinja").read_text()
        write("chat_template", f"{r['template']}_{r['case']}", source + SEP + json.dumps(r["messages"], ensure_ascii=False))
    # The language one feature at a time, with each snippet's variables as extra variables.
    snippets = json.loads((ROOT / "tests/golden/templates/snippets.json").read_text())
    for k, s in enumerate(snippets):
        write("chat_template", f"snippet_{k:02d}", s["template"] + SEP + json.dumps(s["vars"], ensure_ascii=False))
    # What a hostile template tries: integer edges, values that double, quadratic work, widths.
    loop = "{% set ns = namespace(v=SEED) %}{% for i in range(64) %}{% set ns.v = STEP %}{% endfor %}{{ ns.v | length }}"
    hostile = {
        "int_min_floordiv": "{{ (-9223372036854775807 - 1) // -1 }} {{ (-9223372036854775807 - 1) % -1 }} "
                            "{{ -(-9223372036854775807 - 1) }} {{ 18446744073709551615 // -1 }}",
        "pow_huge": "{{ 10 ** 20 }} {{ 2 ** 63 }} {{ 2 ** 64 }} {{ (-2) ** 63 }} {{ 7 ** 100 }} {{ 2.0 ** 10000 }} {{ 0 ** -1 }}",
        "mul_overflow": "{{ 4294967296 * 4294967296 }} {{ 18446744073709551615 + 1 }} {{ 1e308 * 10 }} {{ 1e300 | int }}",
        "double_string": loop.replace("SEED", "'ab'").replace("STEP", "ns.v ~ ns.v"),
        "double_list": loop.replace("SEED", "[1]").replace("STEP", "ns.v + ns.v"),
        "double_join": loop.replace("SEED", "'ab'").replace("STEP", "[ns.v, ns.v] | join"),
        "double_tojson": loop.replace("SEED", "[1]").replace("STEP", "[ns.v, ns.v]") + "{{ ns.v | tojson }}{{ ns.v }}",
        "replace_bomb": loop.replace("SEED", "'a'").replace("STEP", "ns.v.replace('a', 'aaa')"),
        "replace_empty": "{{ ('ab' * 1000).replace('', '-') | length }}{{ 'x' * 100000 | replace('x', 'yy') | length }}",
        "format_widths": "{{ '%999999999d' % 1 }}{{ '{:>999999999}'.format(1) }}{{ 'x' | center(999999999) }}"
                         "{{ '%.999999f' % 1.5 }}{{ 'a' | indent(99999999) }}",
        "deep_nesting": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}" + "{{ " + "[" * 90 + "1" + "]" * 90 + " }}",
        "namespace_cycle": "{% set ns = namespace(v=[1]) %}{% set ns.v = [ns] %}{{ ns.v | length }}{{ ns.v | tojson }}"
                           "{{ ns.v }}{% set b = namespace(v=1) %}{% set b.v = [b] %}{{ ns == b }}",
        "call_caller": "{% macro m() %}{{ caller() }}{{ caller() }}{% endmacro %}"
                       "{% call m() %}{% call m() %}{% call m() %}x{% endcall %}{% endcall %}{% endcall %}",
    }
    for name, source in hostile.items():
        write("chat_template", f"hostile_{name}", source + SEP + json.dumps({"tools": [{"n": 18446744073709551615}]}))


def request_seeds():
    chat = [
        {"model": "m", "messages": [{"role": "user", "content": "Hello"}]},
        {"model": "m", "messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"}],
         "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "seed": 42, "stop": ["\n", "END"], "stream": True,
         "stream_options": {"include_usage": True}, "logprobs": True, "top_logprobs": 3},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "parts"}]},
                      {"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                      {"role": "tool", "content": "{}"}], "tools": [{"type": "function", "function": {"name": "f"}}],
         "presence_penalty": 1.0, "frequency_penalty": -1.0, "max_completion_tokens": 5},
    ]
    completion = [
        {"model": "m", "prompt": "Once upon a time", "max_tokens": 8},
        {"prompt": [1, 2, 3, 4], "logprobs": 2, "echo": False, "temperature": 0, "ignore_eos": True, "n": 1},
    ]
    for i, body in enumerate(chat):
        write("openai_request", f"chat{i}", b"\x01" + json.dumps(body).encode())
    for i, body in enumerate(completion):
        write("openai_request", f"completion{i}", b"\x00" + json.dumps(body).encode())


def http_gate_seeds():
    """Raw requests for the gate's parser: byte 0 seeds how the harness cuts the input into
    pieces, byte 1 picks its head and body caps (0xff: the largest), then what a client sends."""
    body = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'
    seeds = {
        "post_length": b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n" % len(body) + body,
        "post_chunked": b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                        b'5;ext=1\r\n{"pro\r\n10\r\nmpt":"hi","max_\r\nB\r\ntokens":2}\n\r\n0\r\nX-Trailer: t\r\n\r\n',
        "post_gzip": b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
        "post_no_length": b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n",
        "get_bare_lf": b"GET /health HTTP/1.1\nHost: x\nAccept: */*\n\n",
        "expect_continue": b"PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n{}",
        "trace": b"TRACE / HTTP/1.1\r\nHost: x\r\n\r\n",
        "lowercase": b"get /health HTTP/1.1\r\n\r\n",
        "http10_chunked": b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "both_lengths": b"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "dup_length": b"POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\nX-Brisk-Conn: 7\r\n\r\nok",
        "stray_cr": b"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",
        "http2": b"GET / HTTP/2.0\r\n\r\n",
        "options": b"OPTIONS /v1/models HTTP/1.1\r\nOrigin: http://a\r\nAccess-Control-Request-Method: GET\r\n\r\n",
    }
    for name, request in seeds.items():
        write("http_gate", name, bytes([7, 0xFF]) + request)


def grammar_seeds():
    """The first byte picks the front end (0 GBNF, 1 JSON Schema, 2 regex); after SEP, the
    bytes that pick tokens of the walk."""
    json_gbnf = (ROOT / "tests/grammar/json_gbnf.hpp").read_text().split('R"(')[1].split(')";')[0]
    seeds = {
        "gbnf_json": "\x00" + json_gbnf,
        "gbnf_small": "\x00" + 'root ::= ("ab" | [c-e]+){1,3} "."? # c\nx ::= "y"',
        "schema_object": "\x01" + json.dumps({"type": "object", "properties": {"a": {"type": "string", "maxLength": 3},
                                                                              "b": {"type": "array", "items": {"type": "integer"}}},
                                                "required": ["a"]}),
        "schema_refs": "\x01" + json.dumps({"$defs": {"n": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/n"}]}},
                                               "$ref": "#/$defs/n"}),
        "regex": "\x02" + r"[a-z]{2,4}(-\d+)?|x*",
    }
    for name, text in seeds.items():
        write("grammar", name, text + SEP + "\x05\x11\x2a\x07\x63\x01\x00\xff" * 4)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", default=str(ROOT / "build/brisk"))
    a = ap.parse_args()
    shutil.rmtree(OUT, ignore_errors=True)
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        gguf_seeds(a.brisk, tmp)
        safetensors_seeds()
        hf_dir_seeds(a.brisk, tmp)
    tokenizer_seeds()
    template_seeds()
    request_seeds()
    http_gate_seeds()
    grammar_seeds()
    for d in sorted(OUT.iterdir()):
        print(f"{d.name}: {len(list(d.iterdir()))} seeds, {sum(f.stat().st_size for f in d.iterdir())} bytes")


if __name__ == "__main__":
    main()
