"""brisk.LLM: generate, stream, batches, threads and cancellation."""
import threading
import time

import brisk

GREEDY = brisk.SamplingParams(max_tokens=8, temperature=0)
PROMPTS = ["The capital of France is", "Once upon a time", "def fib(n):", "1, 2, 3, 4,", "The sky is",
           "import numpy as", "Water boils at", "My favourite colour is", "In 1969, the first", "The quick brown fox",
           "Dear Sir or Madam,", "SELECT * FROM", "To be or not to be", "The mitochondria is", "print('hello",
           "Roses are red,"]


def test_generate_one_prompt(llm):
    [out] = llm.generate("The capital of France is", GREEDY)
    assert out.finish_reason in ("length", "stop")
    assert out.completion_tokens == len(out.token_ids) > 0
    assert out.prompt_tokens == len(llm.tokenize("The capital of France is"))
    assert out.text == llm.detokenize(out.token_ids)


def test_greedy_is_deterministic_and_seeded_sampling_repeats(llm):
    assert llm.generate(PROMPTS[0], GREEDY)[0].token_ids == llm.generate(PROMPTS[0], GREEDY)[0].token_ids
    seeded = brisk.SamplingParams(max_tokens=8, temperature=0.9, top_p=0.9, seed=1234)
    assert llm.generate(PROMPTS[1], seeded)[0].token_ids == llm.generate(PROMPTS[1], seeded)[0].token_ids


def test_stream_pieces_make_the_whole_text(llm):
    pieces = list(llm.stream("Once upon a time", GREEDY))
    assert len(pieces) >= 1
    assert "".join(pieces) == llm.generate("Once upon a time", GREEDY)[0].text


def test_a_batch_of_16_equals_each_prompt_alone(llm):
    together = llm.generate(PROMPTS, GREEDY)
    alone = [llm.generate(p, GREEDY)[0] for p in PROMPTS]
    assert [o.token_ids for o in together] == [o.token_ids for o in alone]
    assert all(o.completion_tokens > 0 for o in together)


def test_threads_run_concurrently_in_one_batch(llm):
    results = {}
    peak = [0]
    long = brisk.SamplingParams(max_tokens=64, temperature=0, ignore_eos=True)

    def work(i):
        results[i] = llm.generate(PROMPTS[i], long)[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    ticks = 0
    while any(t.is_alive() for t in threads):  # the GIL is free while the engine works
        peak[0] = max(peak[0], llm.stats()["running"])
        ticks += 1
        time.sleep(0.005)
    for t in threads:
        t.join()
    assert peak[0] >= 2, "requests from several threads never ran in one batch"
    assert ticks > 3
    for i in range(6):
        assert results[i].token_ids == llm.generate(PROMPTS[i], long)[0].token_ids


def test_cancel_a_stream_mid_answer(llm):
    s = llm.stream("Once upon a time", brisk.SamplingParams(max_tokens=100000, ignore_eos=True, temperature=0))
    got = [next(s) for _ in range(3)]
    assert all(isinstance(p, str) for p in got)
    s.cancel()
    done = s.completion()
    assert done.finish_reason == "cancelled"
    assert done.completion_tokens < 1000


def test_cancel_from_another_thread(llm):
    s = llm.submit("The sky is", brisk.SamplingParams(max_tokens=100000, ignore_eos=True))
    threading.Timer(0.3, s.cancel).start()
    t0 = time.monotonic()
    assert s.completion().finish_reason == "cancelled"
    assert time.monotonic() - t0 < 30


def test_leaving_a_stream_early_cancels_it(llm):
    s = llm.stream("The sky is", brisk.SamplingParams(max_tokens=100000, ignore_eos=True))
    for _ in s:
        break
    s.close()
    assert s.completion().finish_reason == "cancelled"


def test_stop_strings_and_token_prompts(llm):
    ids = llm.tokenize("1, 2, 3, 4,")
    [out] = llm.generate([ids], brisk.SamplingParams(max_tokens=8, temperature=0))
    assert out.prompt_tokens == len(ids)
    if out.text.strip():
        stop = out.text.strip()[:1]
        [cut] = llm.generate([ids], brisk.SamplingParams(max_tokens=8, temperature=0, stop=stop))
        assert stop not in cut.text
        assert cut.finish_reason == "stop"


def test_logprobs(llm):
    [out] = llm.generate("The sky is", brisk.SamplingParams(max_tokens=4, temperature=0, logprobs=3))
    assert len(out.logprobs) == len(out.token_ids)
    for (tid, lp, top), want in zip(out.logprobs, out.token_ids):
        assert tid == want and lp <= 0 and len(top) == 3


def test_tokenize_round_trip(llm):
    text = "Hello, world! Ünïcödé and 数字 123"
    assert llm.detokenize(llm.tokenize(text, add_special=False)) == text
