"""memoryapp.validation: the text rules, and /v1/openapi.json saying exactly what they accept."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from typing import Any

import jsonschema
import pydantic
import pytest
from django.core.exceptions import ValidationError

from memoryapp import validation
from tests.conftest import BASE, Api


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("hello", None),
        ("a\x00b", "nul_character"),
        ("\ud800", "invalid_unicode"),
        ("", "blank"),
        (" \t\n", "blank"),
        ("\u200b\u200d\ufeff", "blank"),
        ("\u2066\u2069", "blank"),
        ("\u0301\u0301", "blank"),
        ("\u20dd \u0301\x01\u3000", "blank"),
        ("\u200bx", None),
        ("e\u0301", None),
    ],
)
def test_it_finds_the_problem_of_a_text(value: str, problem: str | None) -> None:
    found = validation.text_problem(value)

    assert (found[0] if found else None) == problem


def test_it_lets_blank_text_through_when_asked(db: None) -> None:
    assert (validation.text_problem("\u200b", blank_ok=True), validation.storable_problem(" ")) == (
        None,
        None,
    )


def test_it_measures_content_in_utf8_bytes(settings: Any) -> None:
    settings.MEMORY_MAX_CONTENT_BYTES = 4

    assert (validation.content_problem("éé"), validation.content_problem("ééé")) == (
        None,
        ("content_too_large", "content is 6 bytes; the limit is 4 bytes (UTF-8)"),
    )


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ({"a": [1, {"b": "c"}]}, None),
        ({"a": "b\x00"}, "nul_character"),
        ({"a\x00": 1}, "nul_character"),
        ({"a": float("nan")}, "non_finite_number"),
        ({"a": "x" * validation.JSON_MAX_BYTES}, "too_large"),
    ],
)
def test_it_checks_free_form_json(value: Any, code: str | None) -> None:
    found = validation.json_problem(value)

    assert (found[0] if found else None) == code


def test_it_refuses_json_nested_too_deep() -> None:
    value: Any = 1
    for _ in range(validation.JSON_MAX_DEPTH + 1):
        value = [value]

    assert validation.json_problem(value) == (
        "too_deep",
        f"JSON is nested more than {validation.JSON_MAX_DEPTH} levels",
    )


def test_it_gives_forms_the_same_rules() -> None:
    check = validation.django_rule(validation.text_problem)

    with pytest.raises(ValidationError) as caught:
        check("\u200b")

    assert (caught.value.code, caught.value.messages) == ("blank", ["Must not be blank."])


# --- the published schema agrees with the validators (issue 7 finding 9) -----------------

INT32 = validation.INT32_MAX
TEXTS = ["", " ", "\u200b", "\u2066\u2069", "\u0301\u0301", "\u20dd\x01", "e\u0301", "a\x00b", "\x00", "ok", "\u200bok", 42, None]
INTEGERS: list[Any] = [-1, 0, 1, 2, 2.0, 30.5, 64.0, 100, 100.0, 101, 100_000, 100_001, INT32, INT32 + 1]
INTEGERS += [324.0, "30", True, None]
JSON_OBJECTS = [{}, {"k": "v"}, {"k": "v\x00"}, {"k\x00": 1}, {"k": [1, "x", None, {"n": 2.5}]}]
JSON_OBJECTS += [None, "x", [1]]
TAG_LISTS = [[], None, ["t" * 100], ["t" * 101], ["t"] * 50, ["t"] * 51]

# (method, path, base body, field, candidate values); each candidate replaces ``field``.
BODY_CASES: list[tuple[str, str, dict[str, Any], str, list[Any]]] = [
    ("post", "/threads", {"dataset": "d"}, "dataset", [*TEXTS, "d" * 200, "d" * 201]),
    ("post", "/threads", {"dataset": "d"}, "tags", [[t] for t in TEXTS] + TAG_LISTS),
    ("post", "/threads", {"dataset": "d"}, "metadata", JSON_OBJECTS),
    ("post", "/threads", {"dataset": "d"}, "autoCompactThreshold", INTEGERS),
    ("patch", "/threads/{id}", {}, "dataset", [*TEXTS, "d" * 201]),
    ("patch", "/threads/{id}", {}, "tags", [[], None, ["\u200b"], ["a\x00"], ["t"]]),
    ("patch", "/threads/{id}", {}, "metadata", JSON_OBJECTS),
    ("patch", "/threads/{id}", {}, "autoCompactThreshold", INTEGERS),
    ("post", "/threads/{id}/messages", {"role": "user"}, "content", TEXTS),
    ("post", "/threads/{id}/messages", {"role": "user", "content": "x"}, "latencyMs", INTEGERS),
    ("post", "/threads/{id}/messages", {"role": "user", "content": "x"}, "model", [*TEXTS, "m" * 201]),
    (
        "post",
        "/threads/{id}/messages",
        {"role": "user", "content": "x"},
        "tokens",
        # "total >= input + output" has no JSON-schema form (the description says it).
        [{"input": v} for v in INTEGERS] + [{}, None, {"input": None}, {"total": 4}],
    ),
    ("post", "/threads/{id}/prepare", {}, "messageLimit", INTEGERS),
]


def _schema_accepts(document: dict[str, Any], schema: dict[str, Any], value: Any) -> bool:
    root = {**schema, "components": document["components"]}
    return jsonschema.Draft202012Validator(root).is_valid(value)


def _request_schema(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    operation = document["paths"][f"{BASE}{path.replace('{id}', '{thread_id}')}"][method]
    return operation["requestBody"]["content"]["application/json"]["schema"]


def test_it_publishes_a_schema_that_accepts_exactly_what_the_api_accepts(api: Api) -> None:
    document = api.get("/v1/openapi.json").json()
    thread_id = api.create_thread()["threadId"]
    disagreements = []
    for method, path, base, field, values in BODY_CASES:
        schema = _request_schema(document, method, path)
        url = f"{BASE}{path.replace('{id}', thread_id)}"
        for value in values:
            body = {**base, field: value}
            send = api.post if method == "post" else api.patch
            answered = send(url, body).status_code
            expected = _schema_accepts(document, schema, body)
            if expected != (answered < 300):
                disagreements.append((method, path, json.dumps(body)[:80], expected, answered))

    assert disagreements == [], disagreements


@pytest.mark.parametrize(
    ("name", "value"),
    [("cursor", "garbage"), ("cursor", "12-" + "0" * 32), ("cursor", "12-ABC"), ("dataset", "a\x00")],
)
def test_it_publishes_query_parameters_that_match_the_api(api: Api, name: str, value: str) -> None:
    document = api.get("/v1/openapi.json").json()
    parameters = document["paths"][f"{BASE}/threads"]["get"]["parameters"]
    schema = next(p["schema"] for p in parameters if p["name"] == name)

    answered = api.client.get(
        f"{BASE}/threads", {name: value}, headers={"Authorization": f"Bearer {api.key}"}
    ).status_code

    assert (answered == 200) == _schema_accepts(document, schema, value)


def test_it_refuses_null_where_patch_cannot_clear(api: Api) -> None:
    thread_id = api.create_thread()["threadId"]

    resp = api.patch(f"{BASE}/threads/{thread_id}", {"dataset": None, "tags": None, "metadata": None})

    assert resp.status_code == 400
    assert [(i["path"], i["code"]) for i in resp.json()["issues"]] == [
        (["dataset"], "null"),
        (["tags"], "null"),
        (["metadata"], "null"),
    ]


def test_it_takes_integral_numbers_as_integers(api: Api) -> None:
    thread_id = api.create_thread(autoCompactThreshold=30.0)["threadId"]

    appended = api.append(thread_id, "hi", latencyMs=324.0, tokens={"input": 3.0})
    prepared = api.post(f"{BASE}/threads/{thread_id}/prepare", {"messageLimit": 64.0})
    row = api.get(f"{BASE}/threads/{thread_id}/messages").json()["messages"][0]

    assert (appended.status_code, prepared.status_code) == (201, 200)
    assert (row["latencyMs"], row["tokens"]) == (324, {"input": 3, "output": 0, "total": 3})


def _request_models() -> list[type[pydantic.BaseModel]]:
    """Every pydantic model of the /v1 API and the dashboard's JSON routes."""
    import memoryapp.api
    import playground

    models = []
    for package in (memoryapp.api, playground):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            models += [
                cls for cls in vars(module).values()
                if inspect.isclass(cls) and issubclass(cls, pydantic.BaseModel)
                and cls.__module__ == module.__name__
            ]
    return models


def test_every_string_field_words_a_length_error_as_a_string() -> None:
    """A length rule wrapped around a validated str type (``Annotated[ShortText,
    Field(min_length=1)]``) is checked as a sized value: "Value should have at least 1
    item", a list's wording, code ``too_short``. Strings must say "String should have".
    """
    models = _request_models()
    assert any(m.__name__ == "ToolCallIn" for m in models)  # the scan reaches the API
    worded_as_lists = []
    for model in models:
        for field in model.model_fields:
            for value in ("", "x" * 100_001):
                try:
                    model.model_validate({field: value})
                except pydantic.ValidationError as exc:
                    worded_as_lists += [
                        (model.__name__, field, err["type"])
                        for err in exc.errors()
                        if err["loc"][:1] == (field,) and err["type"] in ("too_short", "too_long")
                    ]
    assert worded_as_lists == []


def test_the_published_schema_describes_the_whole_api_in_plain_words(api: Api) -> None:
    """Tester item 6: the description covered only working memory, the compact operation
    read "Compact now (keepLast 0)", and recall's limit and prepare's messageCount were
    not defined."""
    document = api.get("/v1/openapi.json").json()
    description = document["info"]["description"]
    for part in ("Working memory:", "Long-term memory:", "Agents:", "Datasets:"):
        assert part in description
    paths = document["paths"]
    assert paths["/v1/memory/working/threads/{thread_id}/compact"]["post"]["summary"] == (
        "Compact every un-compacted message now"
    )
    summaries = [op["summary"] for ops in paths.values() for op in ops.values()]
    assert not [s for s in summaries if "keepLast" in s]
    schemas = document["components"]["schemas"]
    assert schemas["RecallIn"]["properties"]["limit"]["description"] == (
        "Per list: episodes, facts and raw each hold up to this many items "
        "(entities are those the returned facts name)."
    )
    assert schemas["PrepareOut"]["properties"]["messageCount"]["description"].startswith(
        "Un-compacted, non-summary messages in the thread (spec 002)"
    )


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ({"a": [1, {"b": "c"}]}, None),
        ({"a": "ok", "b": ["x", "y\x00"]}, (["b", 1], ("nul_character", "text must not contain NUL characters"))),
        ({"a": {"k\x00": 1}}, (["a"], ("nul_character", "a key must not contain NUL characters"))),
        # the first problem in document order
        ({"a": float("inf"), "b": "\x00"}, (["a"], ("non_finite_number", "numbers must be finite (no NaN or Infinity)"))),
        ({"a": "x" * validation.JSON_MAX_BYTES}, None),  # the size is json_problem's alone
    ],
)
def test_it_says_where_free_form_json_breaks_the_rules(value: Any, found: Any) -> None:
    assert validation.json_problem_at(value) == found


def test_it_writes_a_json_path_as_one_reads_it() -> None:
    paths: list[validation.JsonPath] = [["content"], ["extra", "items", 2], [0, "a"]]
    assert [validation.json_path_text(p) for p in paths] == [
        "content", "extra.items[2]", "[0].a",
    ]
