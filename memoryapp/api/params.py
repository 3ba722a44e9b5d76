"""The query-string rule of /v1: a route reads only the query parameters it declares,
each once (docs/decisions.md, "API errors").

django-ninja reads a route's declared parameters from the query string and ignores
everything else in it: ``POST .../prepare?messageLimit=5`` answered the default window
(messageLimit is a body field, spec 002), ``GET /semantic/facts?threadId=`` every fact, and
``?limit=5&limit=6`` took the last value. ``query_check`` wraps every operation of the API
and answers such a request 400 naming the parameter, after the key was checked (as ninja
checks the key before it validates parameters) and before anything else runs. A query
string or path whose percent-decoded bytes are not UTF-8 is refused the same way
(``invalid_unicode``), naming the parameter that holds them.

The same wrapper holds a route that takes no body (compact, end, the DELETE routes) to
the body rule of the routes that take one (docs/api.md, "Errors"): ninja never read
such a body, so ``compact`` with a text/plain body or ``{bad`` compacted. An empty body
is fine; any other must be JSON sent as JSON (415, 400 ``invalid_json``) and a JSON
object or ``null`` (its fields are dropped unread, as unknown fields of every body are),
as prepare's optional body is.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any

from django.http import HttpRequest, QueryDict
from django.http.response import HttpResponseBase
from ninja.errors import HttpError
from ninja.operation import Operation
from ninja.params.models import BodyModel, QueryModel
from pydantic import BaseModel

from memoryapp.errors import InvalidInput
from memoryapp.validation import RAW_PATH_INFO, undecodable_path, undecodable_query

Run = Callable[..., HttpResponseBase]


def declared_query(operation: Operation) -> tuple[frozenset[str], frozenset[str]]:
    """``(names, lists)``: the query parameters ``operation`` declares, and those of them
    that take a list (given more than once on purpose)."""
    names: set[str] = set()
    lists: set[str] = set()
    for model in operation.models:
        if issubclass(model, QueryModel):
            flatten = getattr(model, "__ninja_flatten_map__", None) or {n: (n,) for n in model.model_fields}
            names.update(flatten)
            lists.update(getattr(model, "__ninja_collection_fields__", ()))
    return frozenset(names), frozenset(lists)


# The methods whose body has a meaning (RFC 9110); a GET's or HEAD's body is ignored.
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def takes_body(operation: Operation) -> bool:
    """Whether ``operation`` declares a JSON body (required or optional)."""
    return any(issubclass(model, BodyModel) for model in operation.models)


def unread_body_problem(request: HttpRequest, operation: Operation) -> Exception | None:
    """What is wrong with the body of a request to ``operation``, a route that takes none
    (None: nothing, or an empty body): the exception its API answers, as ninja's
    parsing of a body route would raise it. Unparseable (415 for another media type,
    400 ``invalid_json``, ``too_deep``, ``number_too_long``): an HttpError caused by the
    parser's error; valid JSON that is neither an object nor null: 400 ``model_type``."""
    if not request.body:
        return None
    try:
        data = operation.api.parser.parse_body(request)
    except Exception as exc:
        refused = HttpError(400, "Cannot parse request body")
        refused.__cause__ = exc
        return refused
    if data is None or isinstance(data, dict):
        return None
    return InvalidInput([{"path": [], "message": "Request body must be a JSON object", "code": "model_type"}])


def body_fields(operation: Operation) -> frozenset[str]:
    """The top-level fields of ``operation``'s JSON body (none without one): a query
    parameter of one of these names is told to go in the body."""
    fields: set[str] = set()
    for model in operation.models:
        if issubclass(model, BodyModel):
            for field in model.model_fields.values():
                fields.update(_model_fields(field.annotation))
    return frozenset(fields)


def _model_fields(annotation: Any) -> Iterable[str]:
    # A body is a pydantic model, or an optional one (``PrepareIn | None``).
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation.model_fields
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return [name for arg in typing.get_args(annotation) for name in _model_fields(arg)]
    return ()


def query_issues(
    query: QueryDict, names: frozenset[str], lists: frozenset[str], body: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """The issues of ``query`` (a request's GET) for a route that declares the query
    parameters ``names`` (``lists`` of them take several values; ``body``: its JSON body's
    fields), in the query's order: a parameter the route does not declare
    (``unknown_parameter``), one declared once given more than once
    (``repeated_parameter``). Each issue's path is the parameter's name."""
    issues: list[dict[str, Any]] = []
    for name in query:
        if name not in names:
            issues.append({"path": [name], "message": _unknown(name, names, body), "code": "unknown_parameter"})
        elif name not in lists and len(query.getlist(name)) > 1:
            count = len(query.getlist(name))
            issues.append(
                {
                    "path": [name],
                    "message": f"{name} is given {count} times; give it once",
                    "code": "repeated_parameter",
                }
            )
    return issues


def undecodable(query_string: str) -> list[dict[str, Any]]:
    """The issues of a raw query string (``QUERY_STRING``) whose percent-decoded names or
    values are not UTF-8 (``invalid_unicode``, as the same text in a JSON body is): Django
    decodes them with replacement characters, so ``?dataset=%FF`` read as the dataset
    "\ufffd" and answered an empty list. Each issue's path is the parameter's name
    (memoryapp.validation.undecodable_query)."""
    return [_invalid_unicode(name) for name in undecodable_query(query_string)]


def undecodable_path_issues(path_info: str) -> list[dict[str, Any]]:
    """The issues of a request path (memoryapp.validation.RAW_PATH_INFO) whose
    percent-decoded bytes are not UTF-8 (``invalid_unicode``): ``/datasets/%FF`` addressed
    the dataset "\ufffd" (or "%FF"). Each issue's path is the path parameter's name, such
    as ``dataset`` or ``agent_name`` (memoryapp.validation.undecodable_path)."""
    return [_invalid_unicode(name) for name in undecodable_path(path_info)]


def _invalid_unicode(name: str) -> dict[str, Any]:
    return {"path": [name], "message": f"{name} is not valid UTF-8", "code": "invalid_unicode"}


def _unknown(name: str, names: frozenset[str], body: frozenset[str]) -> str:
    if name in body:
        return f"{name} is not a query parameter of this route: send it in the JSON body"
    if not names:
        return f"{name} is not a query parameter: this route takes none"
    return f"{name} is not a query parameter of this route (it takes {', '.join(sorted(names))})"


def query_check(run: Run) -> Run:
    """A ``view``-mode decorator (``NinjaAPI.add_decorator``, which in that mode wraps
    each bound operation's ``run``) of ``run``, a bound Operation.run.

    A request whose path undecodable_path_issues, or whose query string query_issues or
    undecodable, finds fault with is
    authenticated as the operation would (a missing key stays 401, a spent one 429) and
    then answered 400 ``Validation error`` with those issues; more query parameters than Django parses is
    answered by the API's handler (400 ``too_many_parameters``); any other request runs
    as before. The declared names are read once, here.

    On a route that takes no body, a POST, PUT, PATCH or DELETE whose body
    unread_body_problem finds fault with is authenticated the same way and then answered
    as that problem (415 or 400; 413 for a body too large to read), nothing run."""
    operation: Operation = run.__self__  # type: ignore[attr-defined]
    names, lists = declared_query(operation)
    body = body_fields(operation)
    bodyless = not takes_body(operation)

    @wraps(run)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        path_info = request.META.get(RAW_PATH_INFO, "")
        problem: Exception | None = None
        if bodyless and request.method in BODY_METHODS:
            try:
                problem = unread_body_problem(request, operation)
            except Exception as exc:  # a body too large to read (RequestDataTooBig)
                problem = exc
        # Most requests have no query string at all and an ASCII path: nothing to check.
        if problem is None and not request.META.get("QUERY_STRING") and path_info.isascii():
            return run(request, *args, **kwargs)
        issues = undecodable_path_issues(path_info)
        if request.META.get("QUERY_STRING"):
            try:
                issues += query_issues(request.GET, names, lists, body)
            except Exception as exc:  # more parameters than Django parses (TooManyFieldsSent)
                return operation.api.on_exception(request, exc)
            issues += undecodable(request.META["QUERY_STRING"])
        if issues:
            # The path and query are checked before a body, as ninja checks a body route's.
            problem = InvalidInput(issues)
        if problem is None:
            return run(request, *args, **kwargs)
        refused = operation._run_checks(request)
        if refused is not None:
            return refused
        return operation.api.on_exception(request, problem)

    return checked
