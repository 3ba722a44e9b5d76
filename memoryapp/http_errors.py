"""The JSON error answers of every django-ninja API of the service (/v1 and the
playground's chat route): one place maps exceptions to statuses and error_body.

DESIGN.md section 5: ``{"error": ..., "issues"?: [...]}`` with the status it names;
nothing a client can send produces a 500, and a 500 never carries a traceback.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError
from ninja.parser import Parser

from memoryapp.errors import (
    BODY_MAX_DEPTH,
    BODY_TOO_LARGE,
    INVALID_JSON,
    NUMBER_TOO_LONG,
    TOO_DEEP,
    InvalidInput,
    ModelCallFailed,
    error_body,
)
from memoryapp.validation import issues_from_pydantic

logger = logging.getLogger(__name__)

# The request location ninja puts in front of a field's location, then the parameter
# name it wraps bodies and query schemas in; clients only care about their own fields.
# One of each is stripped, so a field that happens to be called "query" keeps its name.
_LOCATION_PREFIXES = {"body", "query", "path", "header"}
_PARAMETER_NAMES = {"payload", "params", "filters"}
# Statuses of ninja's own HttpErrors and what the body says for them.
_HTTP_ERRORS = {403: "CSRF check failed", 405: "Method not allowed"}


def error_response(
    api: NinjaAPI,
    request: HttpRequest,
    status: int,
    error: str,
    issues: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> HttpResponse:
    """An error_body (memoryapp.errors) as ``api``'s response with ``status``."""
    return api.create_response(request, error_body(error, issues, **extra), status=status)


def validation_issues(errors: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Issues of ninja's pydantic ``errors``, the request location and parameter name
    stripped from each path."""
    issues = []
    for err in errors:
        loc = list(err.get("loc", ()))
        strip = int(bool(loc) and loc[0] in _LOCATION_PREFIXES)
        strip += int(len(loc) > strip and loc[strip] in _PARAMETER_NAMES)
        issues.extend(issues_from_pydantic([err], strip=strip))
    return issues


class BodyTooDeep(ValueError):
    """A request body nests arrays and objects more than BODY_MAX_DEPTH levels."""


# The one media type a request body is read as. A body sent without a Content-Type is
# read as JSON too (a bare ``curl --data-binary`` or a hand-written client may leave it
# out, and nothing else could be meant); any other type is 415.
JSON_MEDIA_TYPE = "application/json"
# How much of a refused Content-Type the 415 repeats.
_MEDIA_TYPE_SHOWN = 100


class UnsupportedMediaType(ValueError):
    """A request body sent with a Content-Type other than application/json
    (``media_type``: its type, lower-cased, without parameters)."""

    def __init__(self, media_type: str) -> None:
        super().__init__(media_type)
        self.media_type = media_type


def media_type_issues(media_type: str) -> list[dict[str, Any]]:
    """The issue of a 415: the ``Content-Type`` header, naming the type that was sent
    (cut to 100 characters) and the one to send."""
    shown = media_type if len(media_type) <= _MEDIA_TYPE_SHOWN else media_type[:_MEDIA_TYPE_SHOWN] + "..."
    return [
        {
            "path": ["Content-Type"],
            "message": f"Content-Type {shown} is not supported: send the body as {JSON_MEDIA_TYPE}",
            "code": "unsupported_media_type",
        }
    ]


def body_media_type_check(request: HttpRequest) -> None:
    """UnsupportedMediaType unless the request's Content-Type is application/json (any
    parameters, such as a charset) or absent."""
    media_type = (request.content_type or "").strip()
    if media_type and media_type != JSON_MEDIA_TYPE:
        raise UnsupportedMediaType(media_type)


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(rb"[\[\]{}]")


def body_depth(body: bytes) -> int:
    """How deep ``body`` (JSON text) nests arrays and objects; brackets inside strings do
    not count. Only an upper bound (the brackets' count) when that is within BODY_MAX_DEPTH,
    which it is for nearly every body: the exact walk runs only past it."""
    opened = body.count(b"[") + body.count(b"{")
    if opened <= BODY_MAX_DEPTH:
        return opened
    depth = deepest = 0
    for bracket in _BRACKET.findall(_JSON_STRING.sub(b'""', body)):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


class JsonBodyParser(Parser):
    """ninja's JSON body parser, refusing a body whose Content-Type is not JSON
    (UnsupportedMediaType, answered 415) and a body nested past BODY_MAX_DEPTH before
    json.loads (which raised RecursionError near 1000 levels, answered as 'not valid
    JSON').

    memoryapp.fastpath parses its bodies with this parser too: what it refuses there is
    handed to Django, which answers it as below."""

    def parse_body(self, request: HttpRequest) -> Any:
        """The request body as JSON; raises UnsupportedMediaType, BodyTooDeep or what
        json.loads raises."""
        body_media_type_check(request)
        body = request.body
        # Nested deeper than BODY_MAX_DEPTH takes more opening brackets than that; most
        # bodies have far fewer, and counting them is cheaper than body_depth's scan.
        if body.count(b"{") + body.count(b"[") > BODY_MAX_DEPTH and body_depth(body) > BODY_MAX_DEPTH:
            raise BodyTooDeep(f"nested more than {BODY_MAX_DEPTH} levels")
        return json.loads(body)


def _unreadable_body(cause: BaseException | None) -> list[dict[str, Any]]:
    """The issue of a body ninja's parser refused (``cause`` is what it raised): nested
    too deeply, an integer literal too long for Python (valid JSON, so not
    invalid_json), else invalid_json."""
    if isinstance(cause, (BodyTooDeep, RecursionError)):
        return TOO_DEEP
    if isinstance(cause, ValueError) and "integer string conversion" in str(cause):
        return NUMBER_TOO_LONG
    return INVALID_JSON


def install_error_handlers(api: NinjaAPI, answers: Sequence[tuple[type[Exception], int, str]]) -> None:
    """Register on ``api`` the handlers every API shares, plus ``answers``: exceptions
    answered with a fixed ``(status, error)``.

    Shared: invalid input 400 ``Validation error`` with issues (413 ``Payload too
    large`` when content is over its limit), a body sent as another media type than
    JSON 415 ``Unsupported media type`` naming it, a body that is not JSON 400 with
    ``invalid_json`` (``too_deep`` past BODY_MAX_DEPTH levels: the API's parser becomes
    JsonBodyParser), a body over the upload limit 413, more query parameters than
    DATA_UPLOAD_MAX_NUMBER_FIELDS 400 (``too_many_parameters``), ninja's 403 (CSRF) and 405,
    ModelCallFailed 502 ``Model call failed`` with ``kind``, ``detail`` and the error's
    ``details``, the database connection lost (OperationalError, InterfaceError) 503
    ``Database unavailable`` with ``Retry-After: 1`` (logged; the request's transaction
    was rolled back, so a retry, with its Idempotency-Key, is safe), anything else 500
    ``Internal server error`` (logged).
    """

    def respond(request: HttpRequest, status: int, error: str, *args: Any, **kw: Any) -> HttpResponse:
        return error_response(api, request, status, error, *args, **kw)

    def invalid(request: HttpRequest, exc: ValidationError | InvalidInput) -> HttpResponse:
        issues = validation_issues(exc.errors) if isinstance(exc, ValidationError) else exc.issues
        if any(i["code"] == "content_too_large" for i in issues):
            return respond(request, 413, "Payload too large", issues)
        return respond(request, 400, "Validation error", issues)

    def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        cause = exc.__cause__
        if exc.status_code == 400 and isinstance(cause, UnsupportedMediaType):
            return respond(request, 415, "Unsupported media type", media_type_issues(cause.media_type))
        if exc.status_code == 400:  # ninja raises this for a body that is not JSON
            return respond(request, 400, "Validation error", _unreadable_body(cause))
        return respond(request, exc.status_code, _HTTP_ERRORS.get(exc.status_code, str(exc)))

    def unhandled(request: HttpRequest, exc: Exception) -> HttpResponse:
        # Never a traceback in an API body, even with DEBUG on; the log has it.
        logger.exception("unhandled error on %s %s", request.method, request.path)
        return respond(request, 500, "Internal server error")

    def database_lost(request: HttpRequest, exc: Exception) -> HttpResponse:
        logger.exception("database error on %s %s", request.method, request.path)
        response = respond(request, 503, "Database unavailable")
        response["Retry-After"] = "1"
        return response

    def model_failed(request: HttpRequest, exc: ModelCallFailed) -> HttpResponse:
        return respond(request, 502, "Model call failed", kind=exc.kind, detail=str(exc), **exc.details)

    def too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
        return respond(request, 413, "Payload too large", BODY_TOO_LARGE)

    def too_many_fields(request: HttpRequest, exc: TooManyFieldsSent) -> HttpResponse:
        message = f"More than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} query parameters"
        return respond(request, 400, "Validation error", [{"path": [], "message": message, "code": "too_many_parameters"}])

    # exception_handler(), not add_exception_handler(): ninja types the latter's handler
    # as taking the class too.
    handlers: list[tuple[type[Exception], Callable[..., HttpResponse]]] = [
        (ValidationError, invalid),
        (InvalidInput, invalid),
        (HttpError, http_error),
        (RequestDataTooBig, too_large),
        (TooManyFieldsSent, too_many_fields),
        (Exception, unhandled),
        (OperationalError, database_lost),
        (InterfaceError, database_lost),
        (ModelCallFailed, model_failed),
        *((exception, _fixed_answer(respond, status, error)) for exception, status, error in answers),
    ]
    for exception, handler in handlers:
        api.exception_handler(exception)(handler)
    api.parser = JsonBodyParser()


def _fixed_answer(respond: Callable[..., HttpResponse], status: int, error: str) -> Callable[..., HttpResponse]:
    def answer(request: HttpRequest, exc: Exception) -> HttpResponse:
        return respond(request, status, error)

    return answer
