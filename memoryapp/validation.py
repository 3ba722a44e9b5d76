"""The text rules and limits every input goes through: /v1 schemas, the chat route, forms.

One module so that the API, the playground and the dashboard refuse exactly the same
things (issue 7, "One validation and error path"). Each rule is a plain function that
returns a problem ``(code, message)`` or None; ``pydantic_rule`` and ``django_rule`` adapt
it to pydantic (400 issues on /v1 and the chat route) and to Django forms.

The pydantic types carry their JSON schema with them, so /v1/openapi.json states what
the validators accept (issue 7 finding 9): a ``pattern`` that excludes NUL and unpaired
surrogates (and, where required, needs one visible character), integral numbers such as
``324.0`` accepted as integers (JSON Schema calls them integers too).
"""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import Resolver404, resolve
from django.utils import timezone
from pydantic import AfterValidator, AwareDatetime, BeforeValidator, Field, WithJsonSchema
from pydantic_core import InitErrorDetails, PydanticCustomError
from pydantic_core import ValidationError as PydanticValidationError

# --- limits -------------------------------------------------------------------------------

# The largest value the integer columns (tokens, latency) hold on every database:
# PostgreSQL's ``integer``. Anything larger would fail in the database, not here.
INT32_MAX = 2**31 - 1
# The largest sequence number a column holds (PostgreSQL's ``bigint``): a query's
# ``before`` / ``after`` past it is refused, not clamped (docs/decisions.md, "API errors").
INT64_MAX = 2**63 - 1
# Nesting depth allowed in free-form JSON (thread metadata); deeper documents would come
# close to Python's recursion limit when the database layer serialises them.
JSON_MAX_DEPTH = 32
# Thread metadata rides along in every thread resource and list page; keep it small.
JSON_MAX_BYTES = 16 * 1024
DATASET_MAX_LENGTH = 200
TAG_MAX_LENGTH = 100
TAGS_MAX = 50
SHORT_TEXT_MAX_LENGTH = 200
# An agent's or a memory tool's name in a body (agent, name) and a tool call's callId.
NAME_MAX_LENGTH = 64
CALL_ID_MAX_LENGTH = 100
# Bounds of autoCompactThreshold (docs/decisions.md: with keepLast 1 a threshold of 1
# could never fold anything).
THRESHOLD_MIN = 2
THRESHOLD_MAX = 100_000
# Upper bound of a project's idle time before its threads end (minutes: one year); more
# would reach before year 1 when subtracted from now.
IDLE_MINUTES_MAX = 525_600
MESSAGE_LIMIT_DEFAULT = 20
MESSAGE_LIMIT_MAX = 100
PAGE_LIMIT_MAX = 100
QUERY_MAX_LENGTH = 10_000
SYSTEM_PROMPT_MAX_LENGTH = 20_000
# A thread-list cursor: the last row's creation time (microseconds since the Unix epoch)
# and id (memoryapp.working). Sixteen digits reach the year 2286, so every cursor that
# matches decodes.
CURSOR_PATTERN = r"^[0-9]{1,16}-[0-9a-f]{32}$"
# An id (thread, episode, ...) as the API writes it: the canonical 8-4-4-4-12 hex form, any
# case. Python's and pydantic's UUID parsers also take braces, "urn:uuid:" and no hyphens.
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

# A client-given time (an imported message's createdAt) may be this far past the server's
# clock (clocks drift), never further: a message cannot have been written in the future
# (memoryapp.working.message_append stores such a time as the server's clock).
CLOCK_SKEW = timedelta(minutes=5)
# ... and not before the Unix epoch: keyset cursors (CURSOR_PATTERN, a fact's validFrom)
# are microseconds since it and have no sign.
EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=UTC)

Problem = tuple[str, str]

# --- the rules ----------------------------------------------------------------------------


def canonical_uuid(value: str | uuid.UUID) -> uuid.UUID:
    """``value`` as a UUID when it is one or is written in the canonical form
    (UUID_PATTERN: ``xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx``, any case); ValueError for
    anything else (braces, ``urn:uuid:``, no hyphens, not a UUID)."""
    if isinstance(value, uuid.UUID):
        return value
    if not isinstance(value, str) or not re.fullmatch(UUID_PATTERN, value):
        raise ValueError("not a UUID in its canonical form")
    return uuid.UUID(value)


def path_id(value: str | uuid.UUID, missing: Callable[[], Exception]) -> uuid.UUID:
    """An object's id from a URL path (thread, episode, job, fact; a thread id also in a
    memory tool call or notes path) as a UUID: canonical_uuid's rule, one for every route.
    A malformed id names no object, so it raises ``missing()`` (the route's 404, e.g.
    ThreadNotFound) rather than a 400: braces, ``urn:uuid:`` or no hyphens are as absent
    as an id that was never issued."""
    try:
        return canonical_uuid(value)
    except ValueError as exc:
        raise missing() from exc


def _uuid_text(value: Any) -> Any:
    if isinstance(value, str) and not re.fullmatch(UUID_PATTERN, value):
        raise PydanticCustomError(
            "uuid_parsing", "must be a UUID in its canonical form (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)"
        )
    return value


def storable_problem(value: str) -> Problem | None:
    """Why ``value`` cannot be stored as given on every database, or None.

    ``nul_character``: PostgreSQL text and jsonb cannot hold NUL (DESIGN.md section 6
    item 6). ``invalid_unicode``: an unpaired surrogate (a JSON ``"\\ud800"`` escape
    decodes to one) has no UTF-8 form.
    """
    if "\x00" in value:
        return "nul_character", "text must not contain NUL characters"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "invalid_unicode", "text must not contain unpaired surrogates"
    return None


def undecodable_query(query_string: str) -> list[str]:
    """The names of the parameters of a raw query string (``QUERY_STRING``, its bytes read
    as latin-1 as PEP 3333 has them) whose percent-decoded name or value is not UTF-8, in
    the query's order (each name decoded with U+FFFD for what is not UTF-8). Django decodes
    them with replacement characters, so ``?dataset=%FF`` would read as the dataset
    "\ufffd"."""
    names: list[str] = []
    for pair in query_string.encode("latin-1", "replace").split(b"&"):
        raw_name, _, raw_value = pair.partition(b"=")
        name_bytes = unquote_to_bytes(raw_name.replace(b"+", b" "))
        value_bytes = unquote_to_bytes(raw_value.replace(b"+", b" "))
        try:
            name_bytes.decode("utf-8")
            value_bytes.decode("utf-8")
        except UnicodeDecodeError:
            names.append(name_bytes.decode("utf-8", "replace"))
    return names


#: The WSGI environ key (PEP 3333: a server's own keys are lower case, with a prefix) that
#: keeps PATH_INFO as the server gave it, the path's percent-decoded bytes read as latin-1:
#: Django's WSGIRequest replaces PATH_INFO with its decoded text, in which the bytes of
#: ``%FF`` (percent-encoded again) and of ``%25FF`` both read "%FF". Set by the ASGI
#: entry point (memoryapp.wsgipool.wsgi_environ) and the WSGI one (memoryapp.wsgi).
RAW_PATH_INFO = "memoryapp.raw_path_info"


def undecodable_path(path_info: str) -> list[str]:
    """The names of the URL parameters of a request path (``path_info``: the path's
    percent-decoded bytes read as latin-1, as RAW_PATH_INFO keeps them) whose bytes are
    not UTF-8, in the route's order; ``["path"]`` when no route's parameter holds them;
    ``[]`` for a UTF-8 path. Django decodes such a path with U+FFFD (or, under WSGI,
    percent-encodes the bad bytes again), so ``/datasets/%FF`` addressed the dataset
    "\ufffd" (or "%FF")."""
    raw = path_info.encode("latin-1", "replace")
    if raw.isascii():
        return []
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return []
    # Each byte that is not UTF-8 becomes a lone surrogate (U+DC80-U+DCFF), which the
    # routes' converters match as any other character: the parameters that hold one are
    # those the bad bytes are in.
    try:
        match = resolve(raw.decode("utf-8", "surrogateescape"))
    except Resolver404:
        return ["path"]
    names = [
        name
        for name, value in match.kwargs.items()
        if isinstance(value, str) and any("\udc80" <= ch <= "\udcff" for ch in value)
    ]
    return names or ["path"]


#: Unicode categories with no base character of their own: combining marks (Mn, Me),
#: format characters (Cf: zero-width space, joiners, BOM, direction marks and isolates),
#: controls (Cc) and separators (Zs, Zl, Zp).
_NO_BASE_CATEGORIES = frozenset({"Mn", "Me", "Cf", "Cc", "Zs", "Zl", "Zp"})


def is_invisible(ch: str) -> bool:
    """True for a character that shows nothing by itself: whitespace, or one of the
    Unicode categories Mn, Me, Cf, Cc, Zs, Zl, Zp (``"\u0301"``, a lone combining accent,
    is one; ``"a\u0301"`` is visible through its ``a``)."""
    return ch.isspace() or unicodedata.category(ch) in _NO_BASE_CATEGORIES


def is_blank(value: str) -> bool:
    """True when ``value`` has nothing visible (every character is_invisible): no base
    character, only marks, format, control and space characters."""
    return all(is_invisible(ch) for ch in value)


def text_problem(value: str, *, blank_ok: bool = False) -> Problem | None:
    """storable_problem, then (unless ``blank_ok``) ``blank`` for nothing visible."""
    problem = storable_problem(value)
    if problem is None and not blank_ok and is_blank(value):
        return "blank", "must not be blank"
    return problem


def content_problem(value: str) -> Problem | None:
    """The rules of a message's content (DESIGN.md section 6 item 6): storable, not
    blank, at most ``MEMORY_MAX_CONTENT_BYTES`` in UTF-8 (``content_too_large``, which
    the API answers with 413). Size is checked last so a huge blank body says "blank"."""
    problem = text_problem(value)
    if problem is not None:
        return problem
    size = len(value) if value.isascii() else len(value.encode("utf-8"))
    limit = int(settings.MEMORY_MAX_CONTENT_BYTES)
    if size > limit:
        return (
            "content_too_large",
            f"content is {size} bytes; the limit is {limit} bytes (UTF-8)",
        )
    return None


JsonPath = list[str | int]


def json_problem_at(value: Any) -> tuple[JsonPath, Problem] | None:
    """Where free-form JSON first breaks json_problem's storability rules, and why: the
    path of the value (object keys and list indexes; ``[]`` for ``value`` itself) and
    its problem, the first in document order; None when every key and string is
    storable, every number finite and nothing nested past JSON_MAX_DEPTH. A key that
    cannot be stored is reported at the object holding it ("a key must not ...").
    The size is not checked here. Walks iteratively: a deep document cannot exhaust the
    stack here."""
    stack: list[tuple[Any, JsonPath]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        problem: Problem | None = None
        if isinstance(item, str):
            problem = storable_problem(item)
        elif isinstance(item, float) and not math.isfinite(item):
            problem = "non_finite_number", "numbers must be finite (no NaN or Infinity)"
        elif isinstance(item, dict | list) and len(path) >= JSON_MAX_DEPTH:
            problem = "too_deep", f"JSON is nested more than {JSON_MAX_DEPTH} levels"
        elif isinstance(item, dict):
            bad_key = next(filter(None, (storable_problem(k) for k in item)), None)
            if bad_key is not None:
                problem = bad_key[0], bad_key[1].replace("text must", "a key must", 1)
            stack.extend((child, [*path, key]) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((child, [*path, i]) for i, child in reversed(list(enumerate(item))))
        if problem is not None:
            return path, problem
    return None


def json_problem(value: Any) -> Problem | None:
    """Free-form JSON (thread metadata): every key and string storable, numbers finite
    (``non_finite_number``), nesting at most JSON_MAX_DEPTH (``too_deep``), at most
    JSON_MAX_BYTES as UTF-8 JSON (``too_large``). json_problem_at says where."""
    found = json_problem_at(value)
    if found is not None:
        return found[1]
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if size > JSON_MAX_BYTES:
        return "too_large", f"metadata is {size} bytes as JSON; the limit is {JSON_MAX_BYTES}"
    return None


def json_path_text(path: JsonPath) -> str:
    """A JSON path as one reads it: ``content``, ``content.items[2]``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


# --- adapters -----------------------------------------------------------------------------


def past_time_problem(value: datetime) -> Problem | None:
    """A client-given time must lie between EARLIEST_TIME and the server's clock plus
    CLOCK_SKEW (``value`` is timezone-aware)."""
    if value < EARLIEST_TIME:
        return ("time_too_early", "must be 1970-01-01T00:00:00Z or later")
    if value > timezone.now() + CLOCK_SKEW:
        minutes = int(CLOCK_SKEW.total_seconds() // 60)
        return ("time_in_future", f"must not be more than {minutes} minutes after the server's current time")
    return None


def pydantic_rule(rule: Callable[[Any], Problem | None]) -> AfterValidator:
    """``rule`` as a pydantic after-validator raising PydanticCustomError(code, message)."""

    def check(value: Any) -> Any:
        problem = rule(value)
        if problem is not None:
            # Braces in a message would be read as pydantic's placeholders.
            code, message = problem
            raise PydanticCustomError(code, message.replace("{", "(").replace("}", ")"))
        return value

    return AfterValidator(check)


def pydantic_json_rule() -> AfterValidator:
    """json_problem_at as a pydantic after-validator: a value that breaks the rules is
    refused at its own path inside the field (``["arguments", "content"]``, not
    ``["arguments"]``), with json_problem's code and message. The size is not checked."""

    def check(value: Any) -> Any:
        found = json_problem_at(value)
        if found is not None:
            path, (code, message) = found
            error = PydanticCustomError(code, message.replace("{", "(").replace("}", ")"))
            raise PydanticValidationError.from_exception_data(
                "json", [InitErrorDetails(type=error, loc=tuple(path), input=value)]
            )
        return value

    return AfterValidator(check)


def django_rule(rule: Callable[[Any], Problem | None]) -> Callable[[Any], None]:
    """``rule`` as a Django field validator raising ValidationError(message, code)."""

    def check(value: Any) -> None:
        problem = rule(value)
        if problem is not None:
            raise DjangoValidationError(problem[1][:1].upper() + problem[1][1:] + ".", code=problem[0])

    return check


def _integral(value: Any) -> Any:
    # JSON Schema counts 324.0 as an integer, so the API does too; 1.5, "12" and true
    # are still refused by the strict int after this.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: What a date-time field expects, said whenever one is refused for its form.
DATETIME_EXPECTED = "must be an ISO 8601 date-time with a timezone, e.g. 2026-01-02T10:00:00Z"
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
# pydantic's codes for a date-time string it could not read, or read without a timezone.
_DATETIME_FORM_CODES = frozenset(
    {"timezone_aware", "datetime_parsing", "datetime_from_date_parsing", "datetime_type"}
)


# Pydantic's codes for "not an object" (a model's or a dict's), whatever the class.
_OBJECT_CODES = frozenset(["model_type", "model_attributes_type", "dict_type"])


def issues_from_pydantic(errors: list[dict[str, Any]], strip: int = 0) -> list[dict[str, Any]]:
    """Pydantic error dicts as API issues ``{"path", "message", "code"}``.

    ``strip`` leading location parts are dropped (the request location and parameter
    name ninja wraps fields in). Two of pydantic's words are put plainly: a string with
    an unpaired surrogate (pydantic's ``string_unicode``, "unable to parse raw data as a
    unicode string", on a length-checked string) reads as storable_problem says it, a
    whole body missing (``missing`` with nothing left of the path) says so, a body or
    field that is not an object says "JSON object" rather than naming a schema class, and a
    date-time refused for its form ("Input should have timezone info" for "2026-01-02")
    says what form it takes (DATETIME_EXPECTED; the code stays pydantic's).
    """
    issues = []
    for err in errors:
        path = [p if isinstance(p, int) else str(p) for p in list(err.get("loc", ()))[strip:]]
        code, message = str(err.get("type", "invalid")), str(err.get("msg", "Invalid value"))
        if code == "string_unicode":
            code, message = "invalid_unicode", "text must not contain unpaired surrogates"
        elif code == "missing" and not path:
            message = "Request body is required: a JSON object"
        elif code in _OBJECT_CODES:  # pydantic names its class: "...instance of TokensIn"
            message = "Request body must be a JSON object" if not path else "Input should be a JSON object"
        elif code in _DATETIME_FORM_CODES and not message.startswith(DATETIME_EXPECTED):
            message = DATETIME_EXPECTED
        issues.append({"path": path, "message": message, "code": code})
    return issues


# --- JSON schema of the rules ------------------------------------------------------------

_STORABLE = r"\x00\ud800-\udfff"


@functools.cache
def _invisible_class() -> str:
    """Every is_invisible character as regex ranges (computed once, when a schema is
    first published)."""
    ranges: list[list[int]] = []
    for code in range(0x110000):
        # NUL and surrogates are in _STORABLE already (and a literal NUL reads badly).
        if code == 0 or 0xD800 <= code <= 0xDFFF or not is_invisible(chr(code)):
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    # Literal characters, not escapes: no invisible character is special in a class, and
    # literals read the same in Python's and ECMA-262's regex dialects.
    return "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges)


def storable_pattern() -> str:
    """A JSON-schema ``pattern`` for storable_problem: no NUL, no unpaired surrogate."""
    return f"^[^{_STORABLE}]*$"


def visible_pattern() -> str:
    """A JSON-schema ``pattern`` for text_problem: storable, one visible character."""
    return f"^[^{_STORABLE}]*[^{_STORABLE}{_invisible_class()}][^{_STORABLE}]*$"


def _with_pattern(pattern: Callable[[], str]) -> Callable[[dict[str, Any]], None]:
    def extra(schema: dict[str, Any]) -> None:
        schema["pattern"] = pattern()

    return extra


def _content_schema(schema: dict[str, Any]) -> None:
    schema["pattern"] = visible_pattern()
    schema["minLength"] = 1
    limit = int(settings.MEMORY_MAX_CONTENT_BYTES)
    schema["maxLength"] = limit
    schema["description"] = f"Visible text, at most {limit} bytes as UTF-8."


# Where a JSON value nests another, the schema refers to the ``JsonValue`` component that
# memoryapp.api publishes; pydantic would try to resolve a ``$ref`` itself, so the
# schemas carry this marker and the API swaps it for the reference (json_value_refs).
JSON_VALUE_MARKER = {"x-json-value": True}
JSON_VALUE_REF = {"$ref": "#/components/schemas/JsonValue"}


def json_value_refs(node: Any) -> Any:
    """``node`` with every JSON_VALUE_MARKER replaced by JSON_VALUE_REF (recursively)."""
    if node == JSON_VALUE_MARKER:
        return dict(JSON_VALUE_REF)
    if isinstance(node, dict):
        return {k: json_value_refs(v) for k, v in node.items()}
    if isinstance(node, list):
        return [json_value_refs(v) for v in node]
    return node


def _json_value_schema() -> dict[str, Any]:
    text = {"type": "string", "pattern": storable_pattern()}
    value: dict[str, Any] = {
        "anyOf": [
            text,
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
            {"type": "array", "items": JSON_VALUE_MARKER},
            {"type": "object", "propertyNames": text, "additionalProperties": JSON_VALUE_MARKER},
        ]
    }
    return value


JSON_VALUE_SCHEMA = _json_value_schema()

# --- the types every schema uses -----------------------------------------------------------

# Length constraints sit on the str itself so errors keep pydantic's string_too_long codes.
Text = Annotated[
    str,
    Field(json_schema_extra=_with_pattern(storable_pattern)),
    pydantic_rule(storable_problem),
]
ShortText = Annotated[
    str,
    Field(max_length=SHORT_TEXT_MAX_LENGTH, json_schema_extra=_with_pattern(storable_pattern)),
    pydantic_rule(storable_problem),
]
# Names and ids that may not be empty. Wrapping ShortText in another Field(min_length=...)
# would check the length after ShortText's validator, as for any sized value: pydantic
# then says "Value should have at least 1 item" (code too_short), a list's wording.
Name = Annotated[
    str,
    Field(min_length=1, max_length=NAME_MAX_LENGTH, json_schema_extra=_with_pattern(storable_pattern)),
    pydantic_rule(storable_problem),
]
CallId = Annotated[
    str,
    Field(min_length=1, max_length=CALL_ID_MAX_LENGTH, json_schema_extra=_with_pattern(storable_pattern)),
    pydantic_rule(storable_problem),
]
SystemPrompt = Annotated[
    str,
    Field(max_length=SYSTEM_PROMPT_MAX_LENGTH, json_schema_extra=_with_pattern(storable_pattern)),
    pydantic_rule(storable_problem),
]
_VISIBLE = _with_pattern(visible_pattern)
Dataset = Annotated[
    str,
    Field(min_length=1, max_length=DATASET_MAX_LENGTH, json_schema_extra=_VISIBLE),
    pydantic_rule(text_problem),
]
Tag = Annotated[
    str,
    Field(min_length=1, max_length=TAG_MAX_LENGTH, json_schema_extra=_VISIBLE),
    pydantic_rule(text_problem),
]
Query = Annotated[
    str,
    Field(min_length=1, max_length=QUERY_MAX_LENGTH, json_schema_extra=_VISIBLE),
    pydantic_rule(text_problem),
]
TagList = Annotated[list[Tag], Field(max_length=TAGS_MAX)]
Content = Annotated[str, Field(json_schema_extra=_content_schema), pydantic_rule(content_problem)]
JsonObject = Annotated[
    dict[str, Any],
    pydantic_rule(json_problem),
    WithJsonSchema(
        {
            "type": "object",
            "propertyNames": {"type": "string", "pattern": storable_pattern()},
            "additionalProperties": JSON_VALUE_MARKER,
            "description": (
                f"Any JSON object: no NUL or unpaired surrogates, nested at most "
                f"{JSON_MAX_DEPTH} levels, at most {JSON_MAX_BYTES} bytes as JSON."
            ),
        }
    ),
]


# An int type is ``Annotated[int, Field(strict=True, ge=..., le=...), INTEGRAL]``: strict
# (no strings, booleans or fractions) except that an integral number such as ``64.0``
# counts, as JSON Schema says.
INTEGRAL = BeforeValidator(_integral)
NonNegInt = Annotated[int, Field(strict=True, ge=0, le=INT32_MAX), INTEGRAL]
Threshold = Annotated[int, Field(strict=True, ge=THRESHOLD_MIN, le=THRESHOLD_MAX), INTEGRAL]
MessageLimit = Annotated[int, Field(strict=True, ge=1, le=MESSAGE_LIMIT_MAX), INTEGRAL]
def _time_text(value: Any) -> Any:
    # JSON has no date type: the schema says a string, so a number (pydantic would read
    # Unix seconds) is refused too.
    if not isinstance(value, str):
        raise PydanticCustomError("datetime_type", DATETIME_EXPECTED)
    if _DATE_ONLY.fullmatch(value.strip()):  # pydantic reads it as midnight, no timezone
        raise PydanticCustomError(
            "timezone_aware", f"{DATETIME_EXPECTED}; a date alone has no time or timezone"
        )
    return value


# A query parameter's text is read strictly (docs/decisions.md, "The query string is
# read strictly"): an integer in plain decimal digits, a boolean true or false.
_QUERY_INT = re.compile(r"0|[1-9][0-9]*")
QUERY_INT_EXPECTED = "must be a whole number in decimal digits, without sign, leading zeros, spaces or fraction (e.g. 20)"


def _query_int(value: Any) -> Any:
    # pydantic's lax int read "+5", "05", "5.0", " 5" and "5_0" as 5.
    if isinstance(value, str) and not _QUERY_INT.fullmatch(value):
        raise PydanticCustomError("int_parsing", QUERY_INT_EXPECTED)
    return value


def _query_bool(value: Any) -> Any:
    # pydantic's lax bool read "1", "yes", "on", "t", "y" (and their negations) too;
    # any case is kept, as Python's requests sends True as "True".
    if isinstance(value, str):
        if value.lower() not in ("true", "false"):
            raise PydanticCustomError("bool_parsing", "must be true or false")
        return value.lower() == "true"
    return value


#: The validator of an integer query parameter (put outside ``| None``).
QUERY_INT = BeforeValidator(_query_int)
#: A boolean query parameter: ``true`` or ``false`` (any case), nothing else.
QueryBool = Annotated[bool, BeforeValidator(_query_bool)]

#: A UUID field of a body or query: only the canonical text form (``format: uuid``).
CanonicalUuid = Annotated[uuid.UUID, BeforeValidator(_uuid_text)]
PastTime = Annotated[
    AwareDatetime,
    BeforeValidator(_time_text),
    Field(
        description=(
            "An RFC 3339 date-time with a UTC offset (e.g. 2023-05-08T13:56:00Z), from "
            "1970-01-01T00:00:00Z to the server's current time."
        )
    ),
    pydantic_rule(past_time_problem),
]
Cursor = Annotated[
    str,
    Field(json_schema_extra=_with_pattern(lambda: CURSOR_PATTERN)),
    pydantic_rule(
        lambda v: None
        if re.fullmatch(CURSOR_PATTERN, v)
        else ("invalid_cursor", "Malformed cursor")
    ),
]
