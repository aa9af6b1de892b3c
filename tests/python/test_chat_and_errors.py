"""brisk.LLM.chat (template, structured output, tools) and bad inputs as exceptions."""
import json

import jsonschema
import pytest

import brisk


def test_chat_answers_with_the_template(llm):
    out = llm.chat([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi."}],
                   brisk.SamplingParams(max_tokens=8, temperature=0))
    assert isinstance(out, brisk.ChatCompletion)
    assert out.finish_reason in ("stop", "length")
    assert out.prompt_tokens > 5
    assert out.content == out.text.strip() or out.content


def test_chat_streams_the_same_answer(llm):
    msgs = [{"role": "user", "content": "Count to three."}]
    p = brisk.SamplingParams(max_tokens=8, temperature=0)
    assert "".join(llm.stream(msgs, p)) == llm.chat(msgs, p).text


SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 150}},
          "required": ["name", "age"], "additionalProperties": False}


def test_json_schema_output_validates(llm):
    fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA, "strict": True}}
    for seed in range(3):
        out = llm.chat([{"role": "user", "content": "A person as JSON."}],
                       brisk.SamplingParams(max_tokens=64, temperature=1.0, seed=seed), response_format=fmt)
        if out.finish_reason == "stop":
            jsonschema.validate(json.loads(out.content), SCHEMA)
        else:
            assert out.finish_reason == "length"


def test_json_object_output_parses(llm):
    out = llm.chat([{"role": "user", "content": "JSON please."}], brisk.SamplingParams(max_tokens=48, temperature=0.7, seed=2),
                   response_format={"type": "json_object"})
    if out.finish_reason == "stop":
        assert isinstance(json.loads(out.content), dict)


def test_generate_under_a_regex_a_choice_and_a_grammar(llm):
    import re
    for seed in range(3):
        p = dict(max_tokens=40, temperature=1.0, seed=seed)
        [r] = llm.generate("Code:", brisk.SamplingParams(regex="[A-F]{2,4}-[0-9]{1,3}", **p))
        assert r.finish_reason == "length" or re.fullmatch("[A-F]{2,4}-[0-9]{1,3}", r.text), r.text
        [c] = llm.generate("Answer:", brisk.SamplingParams(choice=["yes", "no", "not sure"], **p))
        assert c.finish_reason == "stop" and c.text in ("yes", "no", "not sure")
        [g] = llm.generate("List:", brisk.SamplingParams(grammar='root ::= "(" [xy]{1,5} ")"', **p))
        assert g.finish_reason == "stop" and re.fullmatch(r"\([xy]{1,5}\)", g.text), g.text
    with pytest.raises(brisk.InvalidArgument):
        llm.generate("x", brisk.SamplingParams(regex="(a"))
    with pytest.raises(brisk.InvalidArgument):
        llm.generate("x", brisk.SamplingParams(regex="a", choice=["b"]))


WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 16}},
                   "required": ["city"], "additionalProperties": False}}}]


def test_required_tool_choice_gives_a_valid_call(synthetic_qwen):
    out = synthetic_qwen.chat([{"role": "user", "content": "Weather in Paris?"}],
                              brisk.SamplingParams(max_tokens=400, temperature=0.8, seed=4),
                              tools=WEATHER, tool_choice="required", parallel_tool_calls=False)
    # (a random model pads with all the whitespace JSON allows: 20 per gap, hence 400 tokens)
    assert out.finish_reason == "tool_calls", out.text
    assert out.tool_calls and out.tool_calls[0].name == "get_weather"
    assert out.tool_calls[0].id.startswith("call_")
    jsonschema.validate(out.tool_calls[0].parsed_arguments(), WEATHER[0]["function"]["parameters"])


def test_named_tool_choice_not_among_tools(synthetic_qwen):
    with pytest.raises(brisk.InvalidArgument, match="not among the tools"):
        synthetic_qwen.chat([{"role": "user", "content": "x"}], tools=WEATHER,
                            tool_choice={"type": "function", "function": {"name": "nope"}})


def test_a_missing_model_file_is_an_io_error(tmp_path):
    with pytest.raises(brisk.BriskError) as e:
        brisk.LLM(str(tmp_path / "missing.gguf"), device="cpu")
    assert "missing.gguf" in str(e.value)
    assert isinstance(e.value, (brisk.IoError, brisk.InvalidArgument))


def test_a_garbage_model_file_is_a_format_error(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + bytes(range(256)) * 4)
    with pytest.raises(brisk.BriskError) as e:
        brisk.LLM(str(bad), device="cpu")
    assert isinstance(e.value, (brisk.FormatError, brisk.Unsupported, brisk.LimitExceeded))
    assert e.value.message


def test_bad_requests_raise_clear_exceptions(llm):
    with pytest.raises(ValueError, match="empty"):
        llm.generate("", brisk.SamplingParams())
    with pytest.raises(ValueError, match="max_tokens"):
        llm.generate("x", brisk.SamplingParams(max_tokens=0))
    with pytest.raises(brisk.InvalidArgument):
        llm.generate([[10**9]], brisk.SamplingParams())
    with pytest.raises(brisk.InvalidArgument):
        llm.generate("x", brisk.SamplingParams(temperature=-1))
    with pytest.raises(brisk.InvalidArgument):
        llm.chat([{"role": "user", "content": "x"}], response_format={"type": "json_schema",
                                                                     "json_schema": {"name": "x", "schema": {"type": "object", "multipleOf": 3}}})
    with pytest.raises(brisk.InvalidArgument):
        llm.chat([{"role": "user", "content": "x"}], response_format={"type": "yaml"})
    with pytest.raises(brisk.InvalidArgument):
        llm.chat([])
    with pytest.raises(brisk.BriskError):
        brisk.LLM("x.gguf", device="tpu")


def test_an_over_long_prompt_is_refused(llm):
    with pytest.raises(brisk.BriskError, match="context|long|positions"):
        llm.generate("word " * 5000, brisk.SamplingParams(max_tokens=4))
