"""Tenant isolation, generated from the URL conf (issue 12 item 1).

Every route is found by walking Django's URL resolver (the /v1 routes ninja generates, the
dashboard's, the chat route's) and the WebSocket routes, so a route added later is in this
matrix without editing it. Each is called, with each of its methods, by someone of
ANOTHER project (its API key, or a member's session) against real objects of the victim
project, and without credentials:

- /v1 with the other project's key: 404 for every route naming a victim object in its
  path; no route's body holds anything of the victim (ids, names, content, tags,
  metadata); the victim's data is unchanged. Without a key, or with a revoked one: 401.
- dashboard with the other project's member session: 404 for ``?projectId=`` of the
  victim, and for the member's own project with a victim object in the path; without a
  session: the login redirect (or 401 JSON from a route that only fetch() calls).
- the WebSocket: refused (4403) for the other project's member and without a session.

Path parameters are filled from PATH_PARAMETERS, a registry mapping a parameter name to a
factory that builds the object in the victim project. A route with a parameter the
registry does not know FAILS, so a new route cannot be left out: add its factory there.
Methods: a /v1 route's methods and bodies come from the OpenAPI schema (a minimal valid
body built from each schema); a dashboard route's from its ``Allow`` header (the answer
to OPTIONS of Django's method decorators and class views), else GET and POST.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import urlencode

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.apps import apps
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from memoryapp import agents, compaction, episodic, working
from memoryapp.api import api
from memoryapp.chat import chat_turn
from memoryapp.models import ApiKey, Entity, Fact, Job, Membership, Project, Thread
from playground.consumers import CLOSE_FORBIDDEN
from playground.routing import websocket_urlpatterns

SHARED_DATASET = "shared_ds"  # both projects use it: a dataset name is no boundary
PROBE_WORD = "vicsecret"  # every generated string; the victim's content contains it
# Routes anyone may call: the API's documentation and the empty API root (/v1, /v1/), logging in and out.
PUBLIC_ROUTES = {"v1", "v1/", "v1/docs", "v1/openapi.json", "login/", "logout/"}
# Dashboard routes that take no ``?projectId=``: they answer about the user's own projects
# (project-create makes a new one; its empty POST is the form's 400, naming no project).
PROJECTLESS_ROUTES = {"playground:home", "playground:project-create"}
# Routes whose path names an object by a per-project name, where the caller's own project
# gets one of that name (PUT defines the caller's agent): another project's key is answered
# about its own project, so the check is that nothing of the victim shows or changes.
OWN_NAME_ROUTES = {("v1/memory/agents/<agent_name>", "PUT")}
# Path parameters that name nothing when they appear in a body or query: a dataset there
# is the caller's own user scope (any project may use any name).
PATH_ONLY = {"dataset"}
PARAM = re.compile(r"<(?:\w+:)?(\w+)>")
BRACE_PARAM = re.compile(r"\{(\w+)\}")


# --- the two projects ------------------------------------------------------------------------


@dataclass
class Victim:
    """The project whose data must never show: its owner, key, thread and derived objects.

    ``markers`` are strings only the victim's data contains; ``made`` caches what the
    factories built, so each object is built once per test.
    """

    project: Project
    owner: User
    key: ApiKey
    secret: str
    thread: Thread
    token: str
    markers: list[str] = field(default_factory=list)
    made: dict[str, str] = field(default_factory=dict)


@dataclass
class Attacker:
    """The other project: an owner with a session, a key, and a thread of its own."""

    project: Project
    user: User
    secret: str
    thread: Thread


def _victim() -> Victim:
    token = uuid.uuid4().hex
    project = Project.objects.create(slug=f"victim-{token[:8]}", name=f"Victim {token}")
    owner = User.objects.create_user(f"victim_{token[:12]}")
    Membership.objects.create(user=owner, project=project, role=Membership.Role.OWNER)
    key, secret = ApiKey.issue(project=project, name=f"victim key {token}")
    thread = working.thread_create(
        project=project,
        dataset=SHARED_DATASET,
        tags=[f"tag{token}"],
        metadata={"victimNote": f"meta {token}"},
    )
    for n in range(3):
        working.message_append(
            thread=thread, role="user", content=f"{PROBE_WORD} alpha {n} {token}"
        )
    compaction.compact(thread_id=thread.id)
    thread.refresh_from_db()
    markers = [
        token,
        str(thread.id),
        project.name,
        owner.username,
        key.prefix,
        secret,
    ]
    return Victim(project, owner, key, secret, thread, token, markers)


def _attacker() -> Attacker:
    project = Project.objects.create(slug="attacker", name="Attacker")
    user = User.objects.create_user("attacker")
    Membership.objects.create(user=user, project=project, role=Membership.Role.OWNER)
    _, secret = ApiKey.issue(project=project, name="attacker key")
    thread = working.thread_create(project=project, dataset=SHARED_DATASET)
    working.message_append(thread=thread, role="user", content="attacker's own words")
    return Attacker(project, user, secret, thread)


# --- the registry: path parameter name -> factory of a victim object ---------------------------


def _thread_id(v: Victim) -> str:
    return str(v.thread.id)


def _membership_id(v: Victim) -> str:
    member = User.objects.create_user(f"member_{v.token[:12]}")
    v.markers.append(member.username)
    return str(Membership.objects.create(user=member, project=v.project).pk)


def _key_id(v: Victim) -> str:
    return str(v.key.pk)


def _turn_id(v: Victim) -> str:
    result = chat_turn(
        thread=v.thread,
        user=v.owner,
        content=f"{PROBE_WORD} turn {v.token}",
        system_prompt="",
        message_limit=20,
        verbose=False,
    )
    return str(result["turnId"])


def _episode_id(v: Victim) -> str:
    built = episodic.episode_build(thread_id=v.thread.id, from_sequence=1, to_sequence=3)
    assert built.episode is not None
    return str(built.episode.pk)


def _fact_id(v: Victim) -> str:
    message = working.message_append(
        thread=v.thread, role="user", content=f"I drive a {PROBE_WORD} {v.token}"
    ).message
    seq = message.sequence_number
    built = episodic.episode_build(thread_id=v.thread.id, from_sequence=seq, to_sequence=seq)
    return str(Fact.objects.get(episode=built.episode).pk)


def _entity_id(v: Victim) -> str:
    """An entity named after the victim's token (the marker a leak would show)."""
    name = f"place {v.token}"
    entity = Entity.objects.create(
        project=v.project, dataset=SHARED_DATASET, name=name, key=name.casefold(), kind="thing"
    )
    return str(entity.pk)


def _job_id(v: Victim) -> str:
    """A failed job (so a Retry would change it) whose error only the victim's data has."""
    job = Job.objects.create(
        project=v.project,
        thread=v.thread,
        kind="compaction",
        args={"throughSequence": 1},
        idempotency_key=f"{v.thread.pk}:through:1",
        status=Job.Status.FAILED,
        error=f"{PROBE_WORD} failure {v.token}",
        attempts=1,
    )
    return str(job.pk)


def _agent_name(v: Victim) -> str:
    name = f"agent{v.token[:12]}"
    agents.agent_define(
        project=v.project, name=name, system_prompt=f"{PROBE_WORD} prompt {v.token}", memory={}
    )
    return name  # the caller names it in the path: the prompt (with the token) is the marker


def _dataset(v: Victim) -> str:
    """A dataset only the victim holds (the shared one exists in the attacker's project
    too, where its export and delete are the attacker's own)."""
    name = f"victim-{v.token[:12]}"
    thread = working.thread_create(project=v.project, dataset=name)
    working.message_append(thread=thread, role="user", content=f"{PROBE_WORD} own {v.token}")
    return name


PATH_PARAMETERS: dict[str, Callable[[Victim], str]] = {
    "thread_id": _thread_id,
    "episode_id": _episode_id,
    "fact_id": _fact_id,
    "entity_id": _entity_id,
    "job_id": _job_id,
    "agent_name": _agent_name,
    "membership_id": _membership_id,
    "key_id": _key_id,
    "turn_id": _turn_id,
    "dataset": _dataset,
}


def _value(victim: Victim, name: str) -> str:
    if name not in victim.made:
        victim.made[name] = PATH_PARAMETERS[name](victim)
    return victim.made[name]


def _build_all(victim: Victim) -> None:
    """Build every kind of victim object, so a list or search route has all of them to leak."""
    for name in PATH_PARAMETERS:
        _value(victim, name)


def _fill(route: str, victim: Victim) -> str:
    """``route`` (Django syntax) with each parameter replaced by the victim's object."""
    return "/" + PARAM.sub(lambda m: _value(victim, m.group(1)), route)


def _snapshot(victim: Victim) -> dict[str, list[dict[str, Any]]]:
    """What an outsider must not be able to change: every row of the victim's project in
    every memoryapp model that belongs to a project or to a thread."""
    rows = {}
    for model in apps.get_app_config("memoryapp").get_models():
        fields = {f.name for f in model._meta.get_fields()}
        if "project" in fields:
            scope = {"project": victim.project}
        elif "thread" in fields:
            scope = {"thread__project": victim.project}
        else:
            continue
        rows[model.__name__] = list(
            model._default_manager.filter(**scope).values().order_by("pk")
        )
    return rows


def _assert_nothing_of(victim: Victim, body: bytes, what: str) -> None:
    text = body.decode("utf-8", "replace")
    leaked = [m for m in victim.markers if m in text]
    assert leaked == [], f"{what} shows the victim's {leaked}: {text[:400]}"


# --- the routes ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """One URL pattern: its Django route string, ``namespace:name`` and path parameters."""

    route: str
    name: str
    params: tuple[str, ...]

    @property
    def is_api(self) -> bool:
        return self.route.startswith("v1/")


def _walk(patterns: list[Any], prefix: str, namespace: str) -> Iterator[Route]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            ns = ":".join(n for n in (namespace, pattern.namespace or "") if n)
            yield from _walk(pattern.url_patterns, prefix + str(pattern.pattern), ns)
        elif isinstance(pattern, URLPattern):
            route = prefix + str(pattern.pattern)
            yield Route(route, f"{namespace}:{pattern.name}", tuple(PARAM.findall(route)))


@cache
def http_routes() -> tuple[Route, ...]:
    """Every HTTP route but Django's admin (staff only, no tenant data) and PUBLIC_ROUTES."""
    found = _walk(get_resolver().url_patterns, "", "")
    return tuple(
        r for r in found if not r.name.startswith("admin:") and r.route not in PUBLIC_ROUTES
    )


@cache
def openapi() -> dict[str, Any]:
    return api.get_openapi_schema(path_prefix="/v1/")


def _api_key_of(route: str) -> str:
    return "/" + PARAM.sub(lambda m: "{" + m.group(1) + "}", route)


def _operations(route: Route) -> dict[str, dict[str, Any]]:
    """The OpenAPI operations (method -> operation) of a /v1 route."""
    path = openapi()["paths"].get(_api_key_of(route.route))
    assert path is not None, f"{route.route} is not in /v1/openapi.json: its methods are unknown"
    return {m.upper(): op for m, op in path.items() if m in {"get", "post", "put", "patch", "delete"}}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _example(schema: dict[str, Any], name: str, victim: Victim, refs: list[str] | None) -> Any:
    """A minimal valid value for ``schema``. With ``refs`` (a list), a field named like a
    registry parameter (``threadId`` -> ``thread_id``) gets the victim's object and its
    name is appended to ``refs``."""
    components = openapi().get("components", {}).get("schemas", {})
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    for combinator in ("anyOf", "oneOf", "allOf"):
        if combinator in schema:
            options = [s for s in schema[combinator] if s.get("type") != "null"]
            return _example(options[0], name, victim, refs)
    if refs is not None and _snake(name) in PATH_PARAMETERS.keys() - PATH_ONLY:
        refs.append(_snake(name))
        return _value(victim, _snake(name))
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "object")
    if kind == "object":
        props = schema.get("properties", {})
        wanted = set(schema.get("required", []))
        if refs is not None:
            wanted |= {p for p in props if _snake(p) in PATH_PARAMETERS.keys() - PATH_ONLY}
        return {p: _example(props[p], p, victim, refs) for p in sorted(wanted)}
    if kind == "array":
        item = _example(schema.get("items", {}), name, victim, refs)
        return [item] * schema.get("minItems", 0)
    if kind in {"integer", "number"}:
        return max(schema.get("minimum", 1), 1)
    if kind == "boolean":
        return False
    return SHARED_DATASET if name == "dataset" else PROBE_WORD


def _api_requests(route: Route, victim: Victim) -> Iterator[tuple[str, str, Any, bool]]:
    """(method, url, body, names_victim_object_outside_the_path) for each method: a minimal
    valid call, and, where the body or query has fields that can name a victim object
    (``threadId``), the same call naming one."""
    for method, op in _operations(route).items():
        refs: list[str] | None
        for refs in (None, []):
            query = {
                p["name"]: _example(p.get("schema", {}), p["name"], victim, refs)
                for p in op.get("parameters", [])
                if p["in"] == "query"
                and (
                    p.get("required")
                    or (refs is not None and _snake(p["name"]) in PATH_PARAMETERS.keys() - PATH_ONLY)
                )
            }
            content = op.get("requestBody", {}).get("content", {}).get("application/json")
            body = _example(content["schema"], "", victim, refs) if content else None
            if refs == []:
                continue  # nothing to name: the minimal call covered it
            url = _fill(route.route, victim)
            if query:
                url += "?" + urlencode(query, doseq=True)
            yield method, url, body, bool(refs)


def _call(client: Client, method: str, url: str, body: Any, headers: dict[str, str]) -> Any:
    data = "" if body is None else json.dumps(body)
    return client.generic(method, url, data, content_type="application/json", headers=headers)


# --- /v1 --------------------------------------------------------------------------------------


API_ROUTES = [r for r in http_routes() if r.is_api]
DASHBOARD_ROUTES = [r for r in http_routes() if not r.is_api]


@pytest.fixture
def victim(db: None) -> Victim:
    return _victim()


@pytest.fixture
def attacker(db: None) -> Attacker:
    return _attacker()


def test_it_knows_every_path_parameter_of_every_route() -> None:
    unknown = {
        f"{r.route} <{p}>"
        for r in http_routes()
        for p in r.params
        if p not in PATH_PARAMETERS
    }
    unknown |= {
        f"{p.pattern} <{name}>"
        for p in websocket_urlpatterns
        for name in PARAM.findall(str(p.pattern))
        if name not in PATH_PARAMETERS
    }
    assert unknown == set(), (
        "add a factory building the victim's object to PATH_PARAMETERS in "
        f"tests/test_isolation.py for: {sorted(unknown)}"
    )


def test_it_finds_the_routes_it_must_cover() -> None:
    # The walk itself: if it found nothing, every test below would pass vacuously.
    names = {r.name for r in http_routes()}
    assert {"v1:create_thread", "playground:thread", "playground:chat"} <= names
    assert len(API_ROUTES) >= 10 and len(DASHBOARD_ROUTES) >= 10


@pytest.mark.parametrize("route", API_ROUTES, ids=lambda r: r.route)
def test_it_answers_another_projects_key_with_404_and_nothing_of_the_victim(
    route: Route, victim: Victim, attacker: Attacker
) -> None:
    if not route.params:
        _build_all(victim)
    calls = list(_api_requests(route, victim))  # builds the victim's objects first
    # A call that defines the caller's own object of that name goes last, so the reads
    # before it still look for the victim's.
    calls.sort(key=lambda c: (route.route, c[0]) in OWN_NAME_ROUTES)
    before = _snapshot(victim)
    client = Client()
    headers = {"Authorization": f"Bearer {attacker.secret}"}
    for method, url, body, names_object in calls:
        resp = _call(client, method, url, body, headers)
        what = f"{method} {url} with another project's key"
        assert resp.status_code < 500, f"{what}: {resp.status_code}"
        if (route.route, method) in OWN_NAME_ROUTES:
            assert resp.status_code in {200, 201, 400}, f"{what}: {resp.status_code}"
        elif route.params:
            assert resp.status_code == 404, f"{what}: {resp.status_code} {resp.content[:300]!r}"
            assert resp.json()["error"].endswith("not found"), what
        elif names_object:
            assert resp.status_code in {400, 404}, f"{what}: {resp.status_code}"
        _assert_nothing_of(victim, resp.content, what)
    assert _snapshot(victim) == before


@pytest.mark.parametrize("route", API_ROUTES, ids=lambda r: r.route)
def test_it_answers_401_without_a_valid_key(route: Route, victim: Victim) -> None:
    revoked, revoked_secret = ApiKey.issue(project=victim.project, name="revoked")
    revoked.revoke()
    client = Client()
    for method, url, body, _ in _api_requests(route, victim):
        for headers in ({}, {"Authorization": f"Bearer {revoked_secret}"}):
            resp = _call(client, method, url, body, headers)
            assert (resp.status_code, resp.json()) == (401, {"error": "Unauthorized"}), (
                f"{method} {url} {headers}"
            )


# --- the dashboard -------------------------------------------------------------------------------


def _methods(client: Client, url: str) -> list[str]:
    allow = client.options(url).headers.get("Allow", "")
    methods = [m.strip().upper() for m in allow.split(",") if m.strip()]
    methods = [m for m in methods if m in {"GET", "POST", "PUT", "PATCH", "DELETE"}]
    return methods or ["GET", "POST"]


def _dashboard_call(client: Client, method: str, url: str, project: Project | None) -> Any:
    sep = "&" if "?" in url else "?"
    full = f"{url}{sep}projectId={project.pk}" if project is not None else url
    if method == "GET":
        return client.get(full)
    return client.generic(method, full, "", content_type="application/x-www-form-urlencoded")


@pytest.mark.parametrize("route", DASHBOARD_ROUTES, ids=lambda r: r.name)
def test_it_answers_another_projects_member_with_404_and_nothing_of_the_victim(
    route: Route, victim: Victim, attacker: Attacker
) -> None:
    if not route.params:
        _build_all(victim)
    url = _fill(route.route, victim)  # builds the victim's objects first
    before = _snapshot(victim)
    client = Client()
    client.force_login(attacker.user)
    for method in _methods(client, url):
        for project in (victim.project, attacker.project):
            if project is attacker.project and not route.params:
                continue  # the member's own project, nothing of the victim's named
            resp = _dashboard_call(client, method, url, project)
            what = f"{method} {url} projectId={project.name} as another project's member"
            if route.name in PROJECTLESS_ROUTES:
                assert resp.status_code < 400 or (method, resp.status_code) == ("POST", 400), what
            else:
                assert resp.status_code == 404, f"{what}: {resp.status_code}"
            _assert_nothing_of(victim, resp.content, what)
        if method == "GET":
            # No projectId: the page is sent to one of the member's own projects, if any.
            resp = client.get(url, follow=True)
            expected = 404 if route.params else 200
            assert resp.status_code == expected, f"GET {url} without projectId"
            _assert_nothing_of(victim, resp.content, f"GET {url} without projectId")
    assert _snapshot(victim) == before


@pytest.mark.parametrize("route", DASHBOARD_ROUTES, ids=lambda r: r.name)
def test_it_sends_a_visitor_without_a_session_to_log_in(route: Route, victim: Victim) -> None:
    client = Client()
    url = _fill(route.route, victim)
    for method in _methods(client, url):
        resp = _dashboard_call(client, method, url, victim.project)
        what = f"{method} {url} without a session"
        if resp.headers.get("Content-Type", "").startswith("application/json"):
            # A route only fetch() calls answers JSON instead of an HTML redirect.
            assert (resp.status_code, resp.json()) == (401, {"error": "Unauthorized"}), what
        else:
            assert resp.status_code == 302, f"{what}: {resp.status_code}"
            assert resp["Location"].startswith("/login/?next="), what
        _assert_nothing_of(victim, resp.content, what)


# --- the WebSocket ----------------------------------------------------------------------------


def _session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("pattern", websocket_urlpatterns, ids=lambda p: str(p.pattern))
async def test_it_refuses_the_websocket_to_another_project_and_to_no_session(
    pattern: Any,
) -> None:
    from memoryapp.asgi import application

    victim = await sync_to_async(_victim)()
    attacker = await sync_to_async(_attacker)()
    url = await sync_to_async(_fill)(str(pattern.pattern), victim)
    cookie = await sync_to_async(_session_cookie)(attacker.user)
    for headers, project in (
        ([(b"cookie", cookie.encode())], victim.project),
        ([(b"cookie", cookie.encode())], attacker.project),
        ([], victim.project),
    ):
        communicator = WebsocketCommunicator(
            application,
            f"{url}?projectId={project.pk}",
            headers=[(b"origin", b"http://testserver"), *headers],
        )
        connected, _ = await communicator.connect(timeout=5)
        if connected:
            assert await communicator.receive_output(timeout=5) == {
                "type": "websocket.close",
                "code": CLOSE_FORBIDDEN,
            }
        await communicator.disconnect()
