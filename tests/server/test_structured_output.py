"""Structured output through the openai client against `brisk serve` on the real Gemma 3 270M
(and the schemas, a regex and a grammar on synthetic Qwen2.5, Llama 3 and Qwen3 models):
JSON schemas of many features (response_format json_schema, and the client's `parse` with a
Pydantic model), json_object, GBNF grammars, regexes and choice lists (extra_body), streamed
and not. Every output that ends by "stop" must parse and validate (the jsonschema package);
bad schemas and grammars are 400s."""
import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import List, Literal, Optional

import jsonschema
import openai
import pydantic
import pytest

from conftest import BRISK, SANITIZED, Server

S = {"type": "string", "maxLength": 24}
SCHEMAS = [
    {"type": "object", "properties": {"name": S, "age": {"type": "integer"}}, "required": ["name", "age"]},
    {"type": "object", "properties": {"city": S, "population": {"type": "number"}, "capital": {"type": "boolean"}},
     "required": ["city", "capital"]},
    {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 5},
    {"type": "array", "items": S, "maxItems": 3},
    {"enum": ["red", "green", "blue"]},
    {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}, "hex": {"type": "string", "pattern": "^#[0-9a-f]{6}$"}},
     "required": ["color", "hex"]},
    {"type": "object", "properties": {"date": {"type": "string", "format": "date"}, "event": S}, "required": ["date", "event"]},
    {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}}, "required": ["id"]},
    {"type": "object", "properties": {"tags": {"type": "array", "items": S, "minItems": 1, "maxItems": 3}}, "required": ["tags"]},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
     "required": ["b"]},
    {"type": "object", "properties": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                                                "required": ["x", "y"]}}, "required": ["point"]},
    {"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"error": S}, "required": ["error"]}]},
    {"type": ["string", "null"], "maxLength": 12},
    {"const": {"ok": True}},
    {"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [S, {"type": "integer"}], "items": False}},
     "required": ["pair"]},
    {"$defs": {"item": {"type": "object", "properties": {"sku": S, "qty": {"type": "integer"}}, "required": ["sku", "qty"]}},
     "type": "object", "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "maxItems": 2}},
     "required": ["items"]},
    {"type": "object", "properties": {"email": {"type": "string", "format": "email"}}, "required": ["email"]},
    {"type": "object", "properties": {"ok": {"type": "boolean"}, "why": {"type": ["string", "null"], "maxLength": 20}},
     "required": ["ok", "why"]},
    {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False},
    {"type": "object", "properties": {"word": {"type": "string", "minLength": 3, "maxLength": 8}}, "required": ["word"]},
    {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}, "required": ["when"]},
    {"type": "object", "properties": {"ip": {"type": "string", "format": "ipv4"}}, "required": ["ip"]},
    {"type": "array", "items": {"type": "boolean"}, "minItems": 3, "maxItems": 3},
    {"type": "object", "properties": {"name": S, "nick": {"type": "string", "maxLength": 10, "nullable": True}},
     "required": ["name"]},
    {"type": "object", "properties": {"level": {"type": "integer", "enum": [1, 2, 3]}, "label": {"const": "x"}},
     "required": ["level", "label"]},
    {"type": "object", "properties": {"matrix": {"type": "array", "items": {"type": "array", "items": {"type": "integer"},
                                                                           "maxItems": 2}, "maxItems": 2}},
     "required": ["matrix"]},
    {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2,4}$"}}, "required": ["code"]},
    {"type": "number"},
    {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0, "maximum": 130},
                                      "delta": {"type": "integer", "exclusiveMinimum": -50, "exclusiveMaximum": 50}},
     "required": ["age", "delta"]},
    {"type": "array", "items": {"type": "integer", "minimum": 1000, "maximum": 99999}, "minItems": 1, "maxItems": 3},
    {"type": "object", "properties": {"title": S, "year": {"type": "integer"}, "genres": {"type": "array", "items": {
        "enum": ["drama", "comedy", "action"]}, "maxItems": 2}}, "required": ["title", "year", "genres"]},
    {"oneOf": [{"type": "object", "properties": {"kind": {"const": "cat"}, "lives": {"type": "integer"}}, "required": ["kind", "lives"]},
               {"type": "object", "properties": {"kind": {"const": "dog"}, "good": {"type": "boolean"}}, "required": ["kind", "good"]}]},
]


def ask(client, schema, i, stream=False, max_tokens=96):
    kw = dict(model="m", messages=[{"role": "user", "content": f"Answer in JSON. Example {i}."}], max_tokens=max_tokens,
              temperature=0.7, seed=i,
              response_format={"type": "json_schema", "json_schema": {"name": f"s{i}", "schema": schema, "strict": True}})
    if not stream:
        r = client.chat.completions.create(**kw)
        return r.choices[0].message.content, r.choices[0].finish_reason
    text, reason = "", None
    for chunk in client.chat.completions.create(stream=True, **kw):
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            reason = chunk.choices[0].finish_reason or reason
    return text, reason


def validate_schemas(client, every, max_tokens=96):
    """Asks every `every`-th schema (some streamed); each output that stops must validate.
    Returns how many of how many stopped."""
    cases = list(enumerate(SCHEMAS))[::every]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda c: (c, ask(client, c[1], c[0], stream=c[0] % 4 == 0, max_tokens=max_tokens)),
                                cases))
    stopped = 0
    for (i, schema), (text, reason) in results:
        assert reason in ("stop", "length"), (i, reason)
        if reason == "stop":
            stopped += 1
            jsonschema.validate(json.loads(text), schema)
    return stopped, len(cases)


def test_every_stopped_output_validates(server):
    stopped, cases = validate_schemas(server.client(), 3 if SANITIZED else 1)
    assert stopped >= cases * 2 // 3, f"only {stopped} of {cases} finished"


@pytest.fixture(scope="module", params=["qwen2"] if SANITIZED else ["qwen2", "llama", "qwen3"])
def synthetic_server(request, tmp_path_factory):
    """A small synthetic model of another architecture, with its own byte-level vocabulary."""
    path = tmp_path_factory.mktemp("models") / f"{request.param}.gguf"
    subprocess.run([str(BRISK), "gen-model", "--arch", request.param, "--size", "small", "--dtype", "q8_0", "--seed", "4",
                    str(path)], check=True, stdout=subprocess.DEVNULL)
    template = {"qwen2": "qwen2.5", "llama": "llama3", "qwen3": "qwen3"}[request.param]
    s = Server("--parallel", "4", "--ctx", "1024", "--chat-template", template, model=path)
    yield s
    assert s.stop() == 0, "".join(s.log)


def test_schemas_on_synthetic_models(synthetic_server):
    """The same schemas on random weights over another vocabulary: every output that stops validates."""
    client = synthetic_server.client()
    stopped, cases = validate_schemas(client, 4 if SANITIZED else 2, max_tokens=256)
    assert stopped >= cases // 2, f"only {stopped} of {cases} finished"
    r = client.completions.create(model="m", prompt="x", max_tokens=64, extra_body={"guided_regex": r"[a-f]{3}-[0-9]{2}"})
    assert re.fullmatch(r"[a-f]{3}-[0-9]{2}", r.choices[0].text) and r.choices[0].finish_reason == "stop"
    r = client.completions.create(model="m", prompt="x", max_tokens=64,
                                  extra_body={"grammar": 'root ::= "(" [0-9]+ (" " [0-9]+)? ")"'})
    assert re.fullmatch(r"\(\d+( \d+)?\)", r.choices[0].text) or r.choices[0].finish_reason == "length"


class Step(pydantic.BaseModel):
    explanation: str = pydantic.Field(max_length=40)
    output: int


class Answer(pydantic.BaseModel):
    steps: List[Step] = pydantic.Field(max_length=2)
    final: int
    unit: Optional[Literal["m", "kg"]]


def test_parse_with_a_pydantic_model(server):
    r = server.client().chat.completions.parse(
        model="m", messages=[{"role": "user", "content": "What is 2 + 3? Show the steps."}], response_format=Answer,
        max_tokens=160, temperature=0)
    choice = r.choices[0]
    if choice.finish_reason == "stop":
        assert isinstance(choice.message.parsed, Answer)
        Answer.model_validate_json(choice.message.content)


def test_json_object_gbnf_regex_and_choice(server):
    client = server.client()
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "A JSON object, please."}],
                                       max_tokens=64, temperature=0, response_format={"type": "json_object"})
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(r.choices[0].message.content), dict)
    grammar = 'root ::= "The answer is " ("yes" | "no") "."'
    r = client.completions.create(model="m", prompt="Is water wet?", max_tokens=16, extra_body={"grammar": grammar})
    assert r.choices[0].text in ("The answer is yes.", "The answer is no."), r.choices[0].text
    r = client.completions.create(model="m", prompt="A phone number:", max_tokens=24, temperature=0.8, seed=3,
                                  extra_body={"guided_regex": r"\(\d{3}\) \d{3}-\d{4}"})
    assert re.fullmatch(r"\(\d{3}\) \d{3}-\d{4}", r.choices[0].text), r.choices[0].text
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Pick a fruit."}], max_tokens=8,
                                       extra_body={"guided_choice": ["apple", "banana", "cherry"]})
    assert r.choices[0].message.content in ("apple", "banana", "cherry")
    assert r.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("extra, param", [
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "number", "minimum": 1}}}},
     "response_format"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "integer", "minimum": 5,
                                                                                         "maximum": 4}}}},
     "response_format"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#/nowhere"}}}},
     "response_format"),
    ({"response_format": {"type": "xml"}}, "response_format"),
    ({"grammar": "root ::= missing"}, "response_format"),
    ({"grammar": 5}, "grammar"),
    ({"guided_regex": "(a"}, "response_format"),
    ({"guided_choice": []}, "guided_choice"),
    ({"guided_choice": ["a"], "grammar": "root ::= \"a\""}, "response_format"),
])
def test_bad_constraints_are_400(server, extra, param):
    with pytest.raises(openai.BadRequestError) as e:
        server.client().chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=4,
                                                extra_body=extra)
    assert e.value.body["param"] == param, e.value.body
