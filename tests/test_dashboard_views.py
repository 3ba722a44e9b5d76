"""Dashboard views (playground.views, playground.access; issue 4 items 1, 2 and 6).

Three users: ``owner`` and ``member`` of the project, and ``outsider``, who owns another
project. Every dashboard view is checked for the outsider (404), a logged-out visitor
(redirect to the login page) and the wrong method (405).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django.urls import reverse

from memoryapp import agents, compaction, llm, working
from memoryapp.llm.port import ModelTimeout
from memoryapp.models import ApiKey, Job, Membership, Message, Project, Thread
from playground import project_views, selectors, views
from tests.conftest import World
from tests.factories import make_membership, make_project, make_user

PASSWORD = "correct-horse-battery"
XSS = "<img src=x onerror=alert(1)>"


# --- a small HTML tree, enough to check nesting -------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    text: str = ""

    def all(self, predicate: Callable[[Node], bool]) -> list[Node]:
        found = [self] if predicate(self) else []
        for child in self.children:
            found.extend(child.all(predicate))
        return found

    def by_testid(self, testid: str) -> list[Node]:
        return self.all(lambda n: n.attrs.get("data-testid") == testid)

    def full_text(self) -> str:
        return self.text + "".join(c.full_text() for c in self.children)


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(Node("#text", {}, text=data))


def tree(response: Any) -> Node:
    builder = _TreeBuilder()
    builder.feed(response.content.decode())
    return builder.root


def bad_request_text(response: Any) -> str:
    """What a dashboard 400 says: asserts it is the rendered 400.html page (the site's
    layout, like 404.html), not a bare-text body, and returns its message."""
    assert response.status_code == 400
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert [t.name for t in response.templates][:2] == ["400.html", "base.html"]
    page = tree(response)
    assert [n.full_text() for n in page.all(lambda n: n.tag == "h1")] == ["Bad request"]
    [message] = page.by_testid("bad-request")
    return message.full_text()


# --- fixtures -------------------------------------------------------------------------------


def url(name: str, project: Project, *args: Any, **query: Any) -> str:
    params = "&".join(f"{k}={v}" for k, v in {"projectId": project.pk, **query}.items())
    return f"{reverse(name, args=args)}?{params}"


def _failed_job(world: World) -> Job:
    return Job.objects.create(
        project=world.project,
        thread=world.thread,
        kind="compaction",
        args={"throughSequence": 0},
        idempotency_key=f"{world.thread.pk}:through:0",
        status=Job.Status.FAILED,
        error="ModelCallFailed: down",
        attempts=1,
    )


# (url name, args from the world, the methods it answers, a method it refuses)
VIEWS: list[tuple[str, Callable[[World], tuple[Any, ...]], list[str], str]] = [
    ("playground:threads", lambda w: (), ["get"], "post"),
    ("playground:thread-create", lambda w: (), ["post"], "get"),
    ("playground:thread", lambda w: (w.thread.pk,), ["get"], "post"),
    ("playground:thread-stats", lambda w: (w.thread.pk,), ["get"], "post"),
    ("playground:thread-compactions", lambda w: (w.thread.pk,), ["get"], "post"),
    ("playground:thread-compact", lambda w: (w.thread.pk,), ["post"], "get"),
    ("playground:thread-edit", lambda w: (w.thread.pk,), ["post"], "get"),
    ("playground:thread-delete", lambda w: (w.thread.pk,), ["get", "post"], "put"),
    ("playground:playground", lambda w: (w.thread.pk,), ["get"], "post"),
    ("playground:thread-jobs", lambda w: (w.thread.pk,), ["get"], "post"),
    ("playground:job-retry", lambda w: (_failed_job(w).pk,), ["post"], "get"),
    ("playground:members", lambda w: (), ["get", "post"], "delete"),
    ("playground:member-remove", lambda w: (w.member_membership.pk,), ["get", "post"], "put"),
    ("playground:keys", lambda w: (), ["get", "post"], "delete"),
    ("playground:key-created", lambda w: (), ["get"], "post"),
    ("playground:key-revoke", lambda w: (w.key.pk,), ["get", "post"], "put"),
    ("playground:settings", lambda w: (), ["get", "post"], "delete"),
]
VIEW_IDS = [v[0].split(":")[1] for v in VIEWS]


def _call(client: Client, method: str, path: str) -> Any:
    return getattr(client, method)(path)


# --- every view: outsider, logged out, wrong method --------------------------------------------


@pytest.mark.parametrize(("name", "args", "methods", "wrong"), VIEWS, ids=VIEW_IDS)
def test_it_answers_404_to_an_outsider_on_every_view(
    world: World, name: str, args: Callable[[World], tuple[Any, ...]], methods: list[str], wrong: str
) -> None:
    client = world.client(world.outsider)
    for method in methods:
        response = _call(client, method, url(name, world.project, *args(world)))
        assert response.status_code == 404, (name, method)
    # Nothing was changed by the outsider's POSTs.
    assert Membership.objects.filter(project=world.project).count() == 2
    assert ApiKey.objects.get(pk=world.key.pk).revoked is None
    assert Project.objects.get(pk=world.project.pk).name == "Acme"


@pytest.mark.parametrize(("name", "args", "methods", "wrong"), VIEWS, ids=VIEW_IDS)
def test_it_answers_404_to_a_malformed_or_unknown_project_id(
    world: World, name: str, args: Callable[[World], tuple[Any, ...]], methods: list[str], wrong: str
) -> None:
    client = world.client(world.owner)
    path = reverse(name, args=args(world))
    for method in methods:
        assert _call(client, method, f"{path}?projectId=abc").status_code == 404
        assert _call(client, method, f"{path}?projectId=-1").status_code == 404
        assert _call(client, method, f"{path}?projectId=99999999").status_code == 404
        assert _call(client, method, f"{path}?projectId={world.other_project.pk}").status_code == 404


@pytest.mark.parametrize(("name", "args", "methods", "wrong"), VIEWS, ids=VIEW_IDS)
def test_it_sends_a_get_without_project_id_to_the_users_project(
    world: World, name: str, args: Callable[[World], tuple[Any, ...]], methods: list[str], wrong: str
) -> None:
    client = world.client(world.owner)
    path = reverse(name, args=args(world))
    if "get" in methods:
        for query in ("", "?projectId="):
            response = client.get(path + query)
            assert response.status_code == 302, name
            assert response["Location"] == f"{path}?projectId={world.project.pk}"
    # Other methods are never redirected: a POST must say which project it changes.
    for method in methods:
        if method != "get":
            assert _call(client, method, path).status_code == 404
    assert Project.objects.get(pk=world.project.pk).name == "Acme"
    assert ApiKey.objects.get(pk=world.key.pk).revoked is None


def test_it_keeps_the_rest_of_the_query_when_it_adds_the_project_id(world: World) -> None:
    client = world.client(world.owner)
    path = reverse("playground:threads")
    response = client.get(f"{path}?dataset=user_42&tag=web")
    assert response.status_code == 302
    target = urlsplit(response["Location"])
    assert target.path == path
    assert parse_qs(target.query) == {
        "dataset": ["user_42"],
        "tag": ["web"],
        "projectId": [str(world.project.pk)],
    }
    assert client.get(response["Location"]).status_code == 200


def test_it_picks_the_project_of_the_named_thread_key_or_membership(world: World) -> None:
    # The owner's first project by name is "Acme"; the objects below are in "Zeta".
    zeta = make_project("Zeta")
    make_membership(world.owner, zeta, Membership.Role.OWNER)
    thread = working.thread_create(project=zeta, dataset="z")
    key, _ = ApiKey.issue(project=zeta, name="z")
    membership = make_membership(world.member, zeta, Membership.Role.MEMBER)
    client = world.client(world.owner)
    for name, arg in (
        ("playground:thread", thread.pk),
        ("playground:thread-stats", thread.pk),
        ("playground:playground", thread.pk),
        ("playground:key-revoke", key.pk),
        ("playground:member-remove", membership.pk),
    ):
        path = reverse(name, args=(arg,))
        response = client.get(path)
        assert response["Location"] == f"{path}?projectId={zeta.pk}", name
        assert client.get(response["Location"]).status_code == 200, name


def test_it_does_not_reveal_the_project_of_a_thread_the_user_cannot_see(world: World) -> None:
    foreign = working.thread_create(project=world.other_project, dataset="x")
    client = world.client(world.owner)
    path = reverse("playground:thread", args=(foreign.pk,))
    response = client.get(path)
    # The same answer as for a thread that does not exist: the user's own first project,
    # where the thread is not found.
    assert response["Location"] == f"{path}?projectId={world.project.pk}"
    assert client.get(response["Location"]).status_code == 404


def test_it_sends_a_user_without_projects_to_the_no_project_page(db: None, settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    client = Client()
    client.force_login(make_user("loner"))
    response = client.get(reverse("playground:threads"), follow=True)
    assert response.redirect_chain == [(reverse("playground:home"), 302)]
    assert tree(response).by_testid("no-project")


@pytest.mark.parametrize(("name", "args", "methods", "wrong"), VIEWS, ids=VIEW_IDS)
def test_it_redirects_a_logged_out_visitor_to_the_login_page(
    world: World, name: str, args: Callable[[World], tuple[Any, ...]], methods: list[str], wrong: str
) -> None:
    client = world.client(None)
    path = url(name, world.project, *args(world))
    for method in methods:
        response = _call(client, method, path)
        assert response.status_code == 302, (name, method)
        target = urlsplit(response["Location"])
        assert target.path == reverse("playground:login")
        assert parse_qs(target.query)["next"] == [path]


@pytest.mark.parametrize(("name", "args", "methods", "wrong"), VIEWS, ids=VIEW_IDS)
def test_it_answers_405_to_the_wrong_method(
    world: World, name: str, args: Callable[[World], tuple[Any, ...]], methods: list[str], wrong: str
) -> None:
    client = world.client(world.owner)
    response = _call(client, wrong, url(name, world.project, *args(world)))
    assert response.status_code == 405
    assert sorted(m.strip().lower() for m in response["Allow"].split(",")) == sorted(methods)


def test_it_answers_404_for_a_thread_of_another_project(world: World) -> None:
    foreign = working.thread_create(project=world.other_project, dataset="x")
    client = world.client(world.owner)
    for name in ("playground:thread", "playground:thread-stats", "playground:playground"):
        assert client.get(url(name, world.project, foreign.pk)).status_code == 404
    response = client.post(url("playground:thread-compact", world.project, foreign.pk))
    assert response.status_code == 404


def test_it_answers_404_for_a_key_or_membership_of_another_project(world: World) -> None:
    foreign_key, _ = ApiKey.issue(project=world.other_project, name="theirs")
    foreign_membership = Membership.objects.get(project=world.other_project)
    client = world.client(world.owner)
    assert client.post(url("playground:key-revoke", world.project, foreign_key.pk)).status_code == 404
    assert client.post(
        url("playground:member-remove", world.project, foreign_membership.pk)
    ).status_code == 404
    assert ApiKey.objects.get(pk=foreign_key.pk).revoked is None
    assert Membership.objects.filter(pk=foreign_membership.pk).exists()


# --- login, logout, home, switcher --------------------------------------------------------------


def test_it_logs_in_and_lands_on_the_first_projects_threads(world: World) -> None:
    client = Client()
    response = client.post(
        reverse("playground:login"), {"username": "olivia", "password": PASSWORD}, follow=True
    )
    assert response.redirect_chain[-1] == (url("playground:threads", world.project), 302)
    assert response.status_code == 200


def test_it_refuses_a_wrong_password(world: World) -> None:
    response = Client().post(reverse("playground:login"), {"username": "olivia", "password": "nope"})
    assert response.status_code == 200
    assert "_auth_user_id" not in response.client.session


def test_it_logs_out_by_post_only(world: World) -> None:
    client = world.client(world.owner)
    assert client.get(reverse("playground:logout")).status_code == 405
    response = client.post(reverse("playground:logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("playground:login")
    assert client.get(url("playground:threads", world.project)).status_code == 302


def test_it_shows_a_no_project_page_to_a_user_without_projects(db: None, settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    client = Client()
    client.force_login(make_user("loner"))
    response = client.get(reverse("playground:home"))
    assert response.status_code == 200
    assert tree(response).by_testid("no-project")


def test_it_lists_only_the_users_projects_in_the_switcher(world: World) -> None:
    second = make_project("Beta")
    make_membership(world.owner, second, Membership.Role.MEMBER)
    response = world.client(world.owner).get(url("playground:threads", world.project))
    switcher = tree(response).by_testid("project-switcher")[0]
    options = switcher.all(lambda n: n.tag == "option")
    assert [(o.attrs["value"], o.full_text()) for o in options] == [
        (str(world.project.pk), "Acme"),
        (str(second.pk), "Beta"),
    ]
    assert "selected" in options[0].attrs


# --- threads list -------------------------------------------------------------------------------


def test_it_lists_threads_with_counts(world: World) -> None:
    working.message_append(thread=world.thread, role="user", content="hello")
    working.message_append(thread=world.thread, role="assistant", content="hi")
    compaction.compact(thread_id=world.thread.pk)
    response = world.client(world.member).get(url("playground:threads", world.project))
    assert response.status_code == 200
    rows = tree(response).by_testid("thread-row")
    assert [r.attrs["data-thread-id"] for r in rows] == [str(world.thread.pk)]
    # All rows, as the API's totalMessages and the thread page's "All rows": the two
    # messages and the compaction's summary.
    assert rows[0].by_testid("thread-message-count")[0].full_text() == "3"
    assert rows[0].by_testid("thread-compaction-count")[0].full_text() == "1"
    total = tree(world.client(world.member).get(url("playground:thread", world.project, world.thread.pk)))
    assert total.by_testid("stat-total")[0].full_text() == "3"
    headings = [n.full_text() for n in tree(response).all(lambda n: n.tag == "th")]
    assert headings[3] == "All rows"


def test_the_thread_list_shows_bidi_controls_in_names_instead_of_obeying_them(world: World) -> None:
    working.thread_create(project=world.project, dataset="\u202eu_42", tags=["\u202egnp.exe"])
    client = world.client(world.member)
    for page in (client.get(url("playground:threads", world.project)),
                 client.get(url("playground:threads", world.project, tag="%E2%80%AEgnp.exe"))):
        html = page.content.decode()
        # Not in the list (the filter's input and datalist keep the value, to filter on).
        assert "\u202e" not in html.split('id="thread-list"', 1)[1]
        [tag] = [t for t in tree(page).by_testid("thread-tag") if "gnp" in t.full_text()]
        assert (tag.full_text(), tag.attrs["title"]) == ("U+202Egnp.exe", "[U+202E]gnp.exe")
        assert '<span class="bidi-control" title="RIGHT-TO-LEFT OVERRIDE (U+202E)' in html


def test_it_filters_threads_by_dataset_and_tag(world: World) -> None:
    a = working.thread_create(project=world.project, dataset="user_7", tags=["mobile"])
    b = working.thread_create(project=world.project, dataset="user_7", tags=["web"])
    client = world.client(world.member)

    def ids(**query: str) -> list[str]:
        response = client.get(url("playground:threads", world.project, **query))
        return [r.attrs["data-thread-id"] for r in tree(response).by_testid("thread-row")]

    assert ids(dataset="user_7") == [str(b.pk), str(a.pk)]
    assert ids(tag="web") == [str(b.pk), str(world.thread.pk)]
    assert ids(dataset="user_7", tag="mobile") == [str(a.pk)]
    assert ids(dataset="nobody") == []
    assert ids(tag=" mobile ") == [str(a.pk)]  # trimmed, as tags are stored


def test_it_pages_the_thread_list(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views, "THREADS_PAGE_SIZE", 2)
    newer = [working.thread_create(project=world.project, dataset="d") for _ in range(2)]
    client = world.client(world.member)
    first = client.get(url("playground:threads", world.project))
    page = tree(first)
    assert [r.attrs["data-thread-id"] for r in page.by_testid("thread-row")] == [
        str(newer[1].pk),
        str(newer[0].pk),
    ]
    next_link = page.by_testid("next-page")[0]
    assert next_link.attrs["href"] == next_link.attrs["hx-get"]
    second = client.get(next_link.attrs["href"])
    second_page = tree(second)
    assert [r.attrs["data-thread-id"] for r in second_page.by_testid("thread-row")] == [
        str(world.thread.pk)
    ]
    assert second_page.by_testid("next-page") == []


def test_it_answers_400_to_a_malformed_cursor(world: World) -> None:
    response = world.client(world.member).get(url("playground:threads", world.project, cursor="%%%"))
    assert bad_request_text(response) == "cursor: malformed cursor (use the page's Older link)"


def test_it_answers_400_naming_a_malformed_thread_filter(world: World) -> None:
    response = world.client(world.member).get(url("playground:threads", world.project, dataset="x" * 201))
    assert bad_request_text(response) == "dataset: Ensure this value has at most 200 characters (it has 201)."


def test_it_renders_only_the_thread_list_partial_for_htmx(world: World) -> None:
    client = world.client(world.member)
    path = url("playground:threads", world.project)
    partial = client.get(path, headers={"HX-Request": "true"})
    body = partial.content.decode()
    assert partial.status_code == 200
    assert body.lstrip().startswith('<div id="thread-list"')
    assert "<html" not in body and "thread-create-form" not in body
    assert "HX-Request" in partial["Vary"]
    # A history restore wants the whole page back.
    full = client.get(path, headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})
    assert "<html" in full.content.decode()


def test_it_creates_a_thread_from_the_form(world: World) -> None:
    response = world.client(world.member).post(
        url("playground:thread-create", world.project),
        {"dataset": " user_9 ", "tags": "a, b, a,, c", "auto_compact_threshold": "30"},
    )
    thread = Thread.objects.exclude(pk=world.thread.pk).get()
    assert response.status_code == 302
    assert response["Location"] == url("playground:thread", world.project, thread.pk)
    assert (thread.project_id, thread.dataset, thread.tags, thread.auto_compact_threshold) == (
        world.project.pk,
        "user_9",
        ["a", "b", "c"],
        30,
    )


def test_it_creates_a_thread_of_an_agent_from_the_form(world: World) -> None:
    # The Agents page sends newcomers to "the Threads page" to make an agent's thread,
    # whose form had no agent field.
    agent, _ = agents.agent_define(project=world.project, name="dm", memory={})
    agents.agent_define(project=world.other_project, name="theirs")
    client = world.client(world.member)
    page = client.get(url("playground:threads", world.project)).content.decode()
    assert '<option value="dm">dm</option>' in page and "theirs" not in page

    response = client.post(url("playground:thread-create", world.project), {"dataset": "u", "agent": "dm"})
    refused = client.post(url("playground:thread-create", world.project), {"dataset": "u", "agent": "theirs"})

    thread = Thread.objects.exclude(pk=world.thread.pk).get()
    assert response["Location"] == url("playground:thread", world.project, thread.pk)
    assert (thread.dataset, thread.agent_id) == ("u", agent.pk)
    assert refused.status_code == 400
    assert "Select a valid choice." in refused.content.decode()


def test_it_refuses_an_invalid_thread_form(world: World) -> None:
    response = world.client(world.member).post(
        url("playground:thread-create", world.project),
        {"dataset": "   ", "auto_compact_threshold": "1"},
    )
    assert response.status_code == 400
    assert Thread.objects.count() == 1
    body = response.content.decode()
    assert "This field is required." in body
    assert "Ensure this value is greater than or equal to 2." in body


# --- thread page ----------------------------------------------------------------------------------


def _fill(thread: Thread, count: int, start: int = 1) -> None:
    for i in range(start, start + count):
        compaction.message_append_compacting(
            thread=thread, role="user" if i % 2 else "assistant", content=f"m{i}"
        )


def test_it_shows_every_message_with_its_fields(world: World) -> None:
    working.message_append(
        thread=world.thread,
        role="assistant",
        content="Hybrids hold their value.",
        tokens={"input": 512, "output": 128, "total": 640},
        model="gpt-4o",
        latency_ms=840,
    )
    response = world.client(world.member).get(url("playground:thread", world.project, world.thread.pk))
    assert response.status_code == 200
    message = tree(response).by_testid("message")[0]
    assert (message.attrs["data-seq"], message.attrs["data-role"]) == ("1", "assistant")
    text = " ".join(message.full_text().split())
    assert "#1" in text and "assistant" in text and "gpt-4o" in text and "840 ms" in text
    assert message.by_testid("message-tokens")[0].full_text() == "512 in · 128 out · 640 total"
    assert message.by_testid("message-content")[0].full_text() == "Hybrids hold their value."
    created = Message.objects.get().created_at
    times = message.all(lambda n: n.tag == "time")
    assert times[0].attrs["datetime"] == created.isoformat()


def _message_content_html(response: Any, seq: int) -> str:
    """The inner HTML of message ``seq``'s content element on a rendered page."""
    match = re.search(
        rf'id="msg-{seq}".*?data-testid="message-content">(.*?)</div>\n', response.content.decode(), re.S
    )
    assert match is not None
    return match.group(1)


def test_it_shows_an_offline_replys_lines_as_lines_and_user_text_as_typed(world: World) -> None:
    client = world.client(world.member)
    working.message_append(thread=world.thread, role="user", content="I'm looking for a family car.\nA hybrid.")
    chat = client.post(
        url("playground:chat", world.project, world.thread.pk),
        data='{"content": "Which car am I looking for?"}',
        content_type="application/json",
    )
    assert chat.status_code == 201, chat.content
    reply = Message.objects.get(thread=world.thread, sequence_number=3).content
    lines = reply.split("\n")
    assert lines[1] == "From memory:" and len(lines) >= 3 and all(q.startswith("> ") for q in lines[2:])
    page = client.get(url("playground:playground", world.project, world.thread.pk))
    escape = lambda text: text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")  # noqa: E731
    quotes = "<br>\n".join(escape(q.removeprefix("> ")) for q in lines[2:])
    assert _message_content_html(page, 3) == (
        f"<p>{escape(lines[0])}<br>\nFrom memory:</p>\n<blockquote>\n<p>{quotes}</p>\n</blockquote>"
    )
    # The user's text is as typed: no markup, its newline left to the page's CSS.
    assert _message_content_html(page, 1) == "I&#x27;m looking for a family car.\nA hybrid."
    assert _message_content_html(page, 2) == "Which car am I looking for?"


def test_it_folds_compacted_messages_under_the_summary_that_covers_them(world: World) -> None:
    thread = working.thread_create(project=world.project, dataset="d", auto_compact_threshold=4)
    _fill(thread, 4)  # #4 trips: 1-3 folded into summary #5, #4 kept verbatim
    _fill(thread, 3, start=6)  # #8 trips: #4, #6, #7 and summary #5 folded into #9, #8 kept
    response = world.client(world.member).get(url("playground:thread", world.project, thread.pk))
    page = tree(response)
    messages = page.by_testid("messages")[0]
    top_level = [
        (n.attrs.get("data-testid"), n.attrs.get("data-seq"))
        for n in messages.all(lambda n: n.tag == "ol")[0].children
        if n.tag == "li"
    ]
    # As the model reads it (issue 10 item 2): the active summary where its range (#1-#7)
    # ends, then #8, which the run kept verbatim although its row came first; the
    # superseded summary #5 collapsed into #9's history.
    assert top_level == [("summary", "9"), ("message", "8")]
    blocks = {b.attrs["data-seq"]: b for b in page.by_testid("summary")}
    assert blocks["5"].attrs["data-active"] == "false"
    assert blocks["9"].attrs["data-active"] == "true"
    earlier = blocks["9"].by_testid("earlier-summaries")[0]
    assert earlier.tag == "details"
    assert [b.attrs["data-seq"] for b in earlier.by_testid("summary")] == ["5"]
    assert blocks["5"].by_testid("superseded-content")[0].tag == "details"

    def folded(block: Node) -> list[str]:
        details = block.by_testid("folded")[0]
        assert details.tag == "details"
        return [m.attrs["data-seq"] for m in details.by_testid("message")]

    assert folded(blocks["5"]) == ["1", "2", "3"]
    assert folded(blocks["9"]) == ["4", "6", "7"]
    assert blocks["5"].by_testid("summary-range")[0].full_text() == "covers #1\u2013#3"
    assert blocks["9"].by_testid("summary-range")[0].full_text() == "covers #1\u2013#7"
    active = page.by_testid("active-summary")[0]
    assert " ".join(active.full_text().split()) == "#9 covers #1\u2013#7"


def test_it_writes_a_one_message_range_as_one_number(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    # A one-message range read "#1-#1" (an en dash) (episodes, summaries); one helper writes them all.
    _fill(world.thread, 1)
    client = world.client(world.member)
    with django_capture_on_commit_callbacks(execute=True):
        ended = client.post(url("playground:thread-end", world.project, world.thread.pk), follow=True)
    flash = " ".join(tree(ended).by_testid("flash")[0].full_text().split())
    assert flash == (
        "Writing long-term memory: message #1 becomes an episode, facts and entities in the background. "
        "The thread stays open for new messages."
    )
    compaction.compact(thread_id=world.thread.pk)

    page = tree(client.get(url("playground:thread", world.project, world.thread.pk)))
    assert page.by_testid("summary-range")[0].full_text() == "covers #1"
    assert " ".join(page.by_testid("active-summary")[0].full_text().split()) == "#2 covers #1"
    history = tree(client.get(url("playground:thread-compactions", world.project, world.thread.pk)))
    assert " ".join(history.by_testid("run-range")[0].full_text().split()) == (
        "Folded message #1 (1 row) into summary #2."
    )


def test_it_shows_the_newest_page_and_loads_older_ones(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selectors, "MESSAGES_PAGE_SIZE", 5)
    _fill(world.thread, 12)
    client = world.client(world.member)
    path = url("playground:thread", world.project, world.thread.pk)
    newest = tree(client.get(path))
    assert [m.attrs["data-seq"] for m in newest.by_testid("message")] == ["8", "9", "10", "11", "12"]
    older = newest.by_testid("load-older")[0]
    assert older.attrs["href"] == older.attrs["hx-get"] == f"{path}&before=8"
    partial = client.get(older.attrs["href"], headers={"HX-Request": "true"})
    assert partial.content.decode().lstrip().startswith('<section id="messages"')
    page = tree(partial)
    assert [m.attrs["data-seq"] for m in page.by_testid("message")] == ["3", "4", "5", "6", "7"]
    assert page.by_testid("messages")[0].attrs["data-before"] == "8"
    last = tree(client.get(page.by_testid("load-older")[0].attrs["href"]))
    assert [m.attrs["data-seq"] for m in last.by_testid("message")] == ["1", "2"]
    assert last.by_testid("load-older") == []


def test_it_groups_rows_folded_by_a_summary_on_a_newer_page(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "MESSAGES_PAGE_SIZE", 3)
    thread = working.thread_create(project=world.project, dataset="d", auto_compact_threshold=6)
    _fill(thread, 6)  # 1-5 folded into #7, #6 kept
    page = tree(
        world.client(world.member).get(
            url("playground:thread", world.project, thread.pk, before=4)
        )
    )
    elsewhere = page.by_testid("folded-elsewhere")[0]
    assert [m.attrs["data-seq"] for m in elsewhere.by_testid("message")] == ["1", "2", "3"]
    assert "summary #7" in elsewhere.full_text()


def test_it_answers_400_to_a_malformed_before(world: World) -> None:
    client = world.client(world.member)
    for bad in ("x", "0", "-3", "1.5"):
        response = client.get(url("playground:thread", world.project, world.thread.pk, before=bad))
        assert bad_request_text(response) == "before: must be a positive integer"
    history = client.get(url("playground:thread-compactions", world.project, world.thread.pk, before="x"))
    assert bad_request_text(history) == "before: must be a positive integer"


def test_it_escapes_message_content(world: World) -> None:
    working.message_append(thread=world.thread, role="user", content=XSS)
    client = world.client(world.member)
    for name in ("playground:thread", "playground:playground"):
        body = client.get(url(name, world.project, world.thread.pk)).content.decode()
        assert "&lt;img src=x onerror=alert(1)&gt;" in body
        assert "<img" not in body


def test_it_escapes_summaries_datasets_tags_and_errors(world: World) -> None:
    thread = working.thread_create(project=world.project, dataset=XSS, tags=[XSS])
    working.message_append(thread=thread, role="user", content=XSS)
    compaction.compact(thread_id=thread.pk)
    Thread.objects.filter(pk=thread.pk).update(last_compaction_error=XSS)
    client = world.client(world.member)
    for path in (
        url("playground:thread", world.project, thread.pk),
        url("playground:threads", world.project),
        url("playground:thread-stats", world.project, thread.pk),
    ):
        assert "<img" not in client.get(path).content.decode()


RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: reverses the text after it until the paragraph ends


def _unisolated(node: Node, isolated: bool = False) -> list[str]:
    """Text nodes holding RLO with no ``<bdi>`` or ``dir="auto"`` element around them."""
    if node.tag == "#text":
        return [node.text] if RLO in node.text and not isolated else []
    if node.tag == "title":
        return []  # no markup there: the text is wrapped in FSI ... PDI instead
    isolated = isolated or node.tag == "bdi" or node.attrs.get("dir") == "auto"
    return [text for child in node.children for text in _unisolated(child, isolated)]


def test_it_isolates_user_text_so_an_override_cannot_reorder_the_page(world: World) -> None:
    evil = f"{RLO}reversed"
    thread = working.thread_create(project=world.project, dataset=evil, tags=[evil, "web"])
    working.message_append(thread=thread, role="user", content=evil, model=evil)
    compaction.compact(thread_id=thread.pk)
    working.message_append(thread=thread, role="assistant", content=evil, model=evil)
    Thread.objects.filter(pk=thread.pk).update(last_compaction_error=evil)
    client = world.client(world.member)
    for path in (
        url("playground:threads", world.project),
        url("playground:threads", world.project, dataset=evil),
        url("playground:thread", world.project, thread.pk),
        url("playground:playground", world.project, thread.pk),
    ):
        response = client.get(path)
        assert response.status_code == 200
        page = tree(response)
        # Shown: as itself where isolated text may hold it (a message), or as its code
        # point where a name is listed (tags, datasets: show_controls).
        assert RLO in page.full_text() or "U+202Ereversed" in page.full_text(), path
        assert _unisolated(page) == [], path
        title = page.all(lambda n: n.tag == "title")[0].full_text()
        if "/threads/" + str(thread.pk) in path:
            assert f"\u2068{evil}\u2069" in title
    content = tree(client.get(url("playground:thread", world.project, thread.pk))).by_testid(
        "summary-content"
    )[0]
    assert content.attrs["dir"] == "auto"


def test_it_isolates_names_in_flash_messages(world: World) -> None:
    key, _ = ApiKey.issue(project=world.project, name=f"{RLO}evil")
    response = world.client(world.owner).post(
        url("playground:key-revoke", world.project, key.pk), follow=True
    )
    flash = tree(response).by_testid("flash")[0].full_text().strip()
    assert flash == f"Revoked key \u201c\u2068{RLO}evil\u2069\u201d. Requests with it now get 401."


def test_it_marks_long_summaries_for_the_show_all_toggle(world: World) -> None:
    _fill(world.thread, 3)
    compaction.compact(thread_id=world.thread.pk)
    page = tree(world.client(world.member).get(url("playground:thread", world.project, world.thread.pk)))
    content = page.by_testid("summary-content")[0]
    # app.js clamps [data-clamp] blocks by id and adds the toggle; no inner scroll box.
    assert "data-clamp" in content.attrs
    assert content.attrs["id"] == "summary-4-content"
    assert "tabindex" not in content.attrs


def test_it_shows_timestamps_short_with_the_full_time_in_the_title(world: World) -> None:
    when = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    Thread.objects.filter(pk=world.thread.pk).update(last_activity=when)
    row = tree(world.client(world.member).get(url("playground:threads", world.project))).by_testid(
        "thread-row"
    )[0]
    # The row shows when the thread was created (the list's order) and its last activity.
    created, activity = row.all(lambda n: n.tag == "time")
    assert created.attrs["datetime"] == world.thread.created.isoformat()
    assert activity.attrs == {"datetime": "2024-05-06T07:08:09+00:00", "title": "2024-05-06 07:08:09 UTC"}
    assert activity.full_text() == "2024-05-06"
    # Labels for the stacked rows of narrow screens.
    labels = [c.attrs.get("data-label") for c in row.children if c.tag == "td"]
    assert labels == [None, None, None, "All rows", "Compactions", None, None]


def test_it_renders_only_the_messages_partial_for_htmx(world: World) -> None:
    working.message_append(thread=world.thread, role="user", content="hello")
    response = world.client(world.member).get(
        url("playground:thread", world.project, world.thread.pk), headers={"HX-Request": "true"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="messages"')
    assert body.rstrip().endswith("</section>")
    assert "<html" not in body and 'id="stats"' not in body and "hello" in body


def test_it_renders_the_stats_partial(world: World) -> None:
    working.message_append(
        thread=world.thread, role="user", content="a", tokens={"input": 10, "output": 0, "total": 10}
    )
    working.message_append(
        thread=world.thread, role="assistant", content="b", tokens={"input": 0, "output": 30, "total": 30}
    )
    response = world.client(world.member).get(
        url("playground:thread-stats", world.project, world.thread.pk), headers={"HX-Request": "true"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="stats"')
    assert "<html" not in body
    stats = tree(response)
    assert stats.by_testid("stat-message-count")[0].full_text() == "2"
    assert stats.by_testid("stat-compactions")[0].full_text().strip() == "0"
    tokens = " ".join(stats.by_testid("stat-tokens")[0].full_text().split())
    assert tokens == "40 total (10 in · 30 out · 20 per message)"


def test_it_serves_the_stats_panel_inside_the_page_when_opened_directly(world: World) -> None:
    working.message_append(thread=world.thread, role="user", content="a")
    compaction.compact(thread_id=world.thread.pk)  # #1 into summary #2
    path = url("playground:thread-stats", world.project, world.thread.pk)

    response = world.client(world.member).get(path)

    assert response.status_code == 200
    assert response.templates[0].name == "playground/thread_panel.html"
    assert "HX-Request" in response["Vary"]
    body = response.content.decode()
    assert body.startswith("<!doctype html>") and 'href="/static/css/app.css"' in body
    page = tree(response)
    heading = " ".join(page.by_testid("page-heading")[0].full_text().split())
    assert heading == f"Stats of thread {world.thread.pk}"
    assert page.by_testid("back-to-thread")[0].attrs["href"] == url("playground:thread", world.project, world.thread.pk)
    (stats,) = page.by_testid("stats")
    assert stats.by_testid("stat-total")[0].full_text() == "2"
    summary_link = page.by_testid("active-summary")[0].all(lambda n: n.tag == "a")[0]
    assert summary_link.attrs["href"] == url("playground:thread", world.project, world.thread.pk) + "#msg-2"
    # The htmx refresh of the thread page still gets the panel alone, linking in the page.
    fragment = world.client(world.member).get(path, headers={"HX-Request": "true"})
    assert fragment.content.decode().lstrip().startswith('<section id="stats"')
    assert tree(fragment).by_testid("active-summary")[0].all(lambda n: n.tag == "a")[0].attrs["href"] == "#msg-2"


def test_it_serves_the_jobs_panel_inside_the_page_when_opened_directly(world: World) -> None:
    _failed_job(world)

    response = world.client(world.member).get(url("playground:thread-jobs", world.project, world.thread.pk))

    assert response.status_code == 200
    body = response.content.decode()
    assert body.startswith("<!doctype html>") and 'href="/static/css/app.css"' in body
    page = tree(response)
    heading = " ".join(page.by_testid("page-heading")[0].full_text().split())
    assert heading == f"Background jobs of thread {world.thread.pk}"
    assert [n.attrs["data-status"] for n in page.by_testid("job")] == ["failed"]
    assert len(page.by_testid("job-retry")) == 1
    assert page.by_testid("stats") == []


def test_a_history_restore_gets_the_whole_panel_page(world: World) -> None:
    # htmx asks for the whole page when it restores one it has not cached (a reload
    # after hx-push-url): HX-Request with HX-History-Restore-Request.
    response = world.client(world.member).get(
        url("playground:thread-stats", world.project, world.thread.pk),
        headers={"HX-Request": "true", "HX-History-Restore-Request": "true"},
    )

    assert response.content.decode().startswith("<!doctype html>")


def _stats_tokens(world: World) -> str:
    response = world.client(world.member).get(
        url("playground:thread-stats", world.project, world.thread.pk), headers={"HX-Request": "true"}
    )
    return " ".join(tree(response).by_testid("stat-tokens")[0].full_text().split())


def test_its_token_average_is_per_reply_when_only_replies_carried_tokens(world: World) -> None:
    # As the playground stores a turn: the model call's tokens on the reply, none on the
    # user message. 4 messages, 2 replies: 600 tokens are 300 per reply, not "per message".
    for reply_tokens in ({"input": 100, "output": 50, "total": 150}, {"input": 400, "output": 50, "total": 450}):
        working.message_append(thread=world.thread, role="user", content="question")
        working.message_append(thread=world.thread, role="assistant", content="answer", tokens=reply_tokens)

    assert _stats_tokens(world) == "600 total (500 in · 100 out · 300 per reply)"


def test_its_token_average_names_the_messages_it_averages_when_some_carried_none(world: World) -> None:
    working.message_append(thread=world.thread, role="user", content="a")
    working.message_append(thread=world.thread, role="user", content="b", tokens={"input": 10, "output": 0, "total": 10})
    working.message_append(thread=world.thread, role="assistant", content="c", tokens={"input": 0, "output": 20, "total": 20})

    assert _stats_tokens(world) == "30 total (10 in · 20 out · 15 per message with tokens)"


def test_it_shows_the_last_compaction_error(world: World) -> None:
    page = tree(world.client(world.member).get(url("playground:thread", world.project, world.thread.pk)))
    assert page.by_testid("compaction-error") == []
    Thread.objects.filter(pk=world.thread.pk).update(last_compaction_error="Model call failed: timeout")
    page = tree(world.client(world.member).get(url("playground:thread", world.project, world.thread.pk)))
    assert "Model call failed: timeout" in page.by_testid("compaction-error")[0].full_text()


def test_it_ends_a_thread_from_its_page_as_a_background_job(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    # The button used to be disabled with "Episodes are not built yet" although end()
    # works through the API.
    _fill(world.thread, 2)
    client = world.client(world.member)
    page = tree(client.get(url("playground:thread", world.project, world.thread.pk)))
    (button,) = page.by_testid("end-thread")
    assert "disabled" not in button.attrs
    # Threads never end (spec 000): the button says what end() does, not "End thread".
    assert button.full_text() == "Write long-term memory"
    assert button.attrs["title"] == (
        "Write an episode, facts and entities from the messages since the last time (a background "
        "job; the API's end()). The thread stays open for new messages."
    )
    end = url("playground:thread-end", world.project, world.thread.pk)

    with django_capture_on_commit_callbacks(execute=True):  # the job runs on commit
        response = client.post(end, follow=True)

    assert response.redirect_chain == [(url("playground:thread", world.project, world.thread.pk), 302)]
    flash = " ".join(tree(response).by_testid("flash")[0].full_text().split())
    assert flash == (
        "Writing long-term memory: messages #1\u2013#2 become an episode, facts and entities in the "
        "background. The thread stays open for new messages."
    )
    job = Job.objects.get(thread=world.thread)
    assert (job.kind, job.status, job.args) == ("episode", "succeeded", {"fromSequence": 1, "toSequence": 2})

    again = client.post(end, follow=True)
    flash = " ".join(tree(again).by_testid("flash")[0].full_text().split())
    assert flash == "Nothing new to write to long-term memory since it was last written."
    assert Job.objects.filter(thread=world.thread).count() == 1


def test_it_ends_only_threads_of_the_users_projects(world: World) -> None:
    other = world.client(make_user("stranger"))
    end = url("playground:thread-end", world.project, world.thread.pk)

    assert other.post(end).status_code == 404
    assert world.client(world.member).get(end).status_code == 405
    assert Job.objects.filter(thread=world.thread).count() == 0


def test_it_compacts_from_the_thread_page_as_a_background_job(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    _fill(world.thread, 3)
    client = world.client(world.member)
    compact = url("playground:thread-compact", world.project, world.thread.pk)
    with django_capture_on_commit_callbacks(execute=True):  # the job runs on commit
        response = client.post(compact, follow=True)
    assert response.redirect_chain == [(url("playground:thread", world.project, world.thread.pk), 302)]
    flash = " ".join(tree(response).by_testid("flash")[0].full_text().split())
    assert flash == "Compaction queued: this page updates when it is done."
    job = Job.objects.get(thread=world.thread)
    assert job.result is not None
    assert (job.kind, job.status, job.args, job.result["compactedCount"]) == (
        "compaction",
        "succeeded",
        {"throughSequence": 3},
        3,
    )
    assert Message.objects.filter(thread=world.thread, compacted_at__isnull=False).count() == 3

    page = tree(client.get(url("playground:thread", world.project, world.thread.pk)))
    shown = page.by_testid("job")[0]
    assert shown.attrs["data-status"] == "succeeded"
    assert " ".join(shown.by_testid("job-result")[0].full_text().split()) == (
        "3 compacted · messages #1\u2013#3"
    )
    again = client.post(compact, follow=True)
    assert " ".join(tree(again).by_testid("flash")[0].full_text().split()) == "Nothing to compact."
    assert Job.objects.filter(thread=world.thread).count() == 1


class _TimingOutModel:
    def summarize(self, **kwargs: Any) -> Any:
        raise ModelTimeout("no answer within 30 s")


def test_it_shows_a_failed_compaction_job_with_its_error_and_a_member_retries_it(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
    settings: Any,
) -> None:
    _fill(world.thread, 2)
    real_model = llm.get_model
    monkeypatch.setattr(llm, "get_model", lambda: _TimingOutModel())
    # "m1", "m2" would be kept word for word without a model call (memoryapp.summary_rules).
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    client = world.client(world.member)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url("playground:thread-compact", world.project, world.thread.pk))
    page = tree(client.get(url("playground:thread", world.project, world.thread.pk)))
    job = Job.objects.get(thread=world.thread)
    assert (job.status, job.error) == ("failed", "ModelCallFailed: no answer within 30 s")
    assert page.by_testid("job")[0].attrs["data-status"] == "failed"
    assert page.by_testid("job-error")[0].full_text().strip() == "ModelCallFailed: no answer within 30 s"
    assert "no answer within 30 s" in page.by_testid("compaction-error")[0].full_text()
    assert Message.objects.filter(thread=world.thread, compacted_at__isnull=False).count() == 0

    monkeypatch.setattr(llm, "get_model", real_model)
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 64  # the retry keeps the short fold word for word
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url("playground:job-retry", world.project, job.pk), follow=True)
    assert response.redirect_chain == [(url("playground:thread", world.project, world.thread.pk), 302)]
    flash = " ".join(tree(response).by_testid("flash")[0].full_text().split())
    assert flash == "Retry queued: the job runs again in the background."
    job.refresh_from_db()
    assert job.result is not None
    assert (job.status, job.error, job.attempts, job.result["compactedCount"]) == ("succeeded", "", 2, 2)
    page = tree(client.get(url("playground:thread", world.project, world.thread.pk)))
    assert page.by_testid("job")[0].attrs["data-status"] == "succeeded"


def test_it_does_not_retry_a_job_that_did_not_fail(world: World) -> None:
    job = _failed_job(world)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.SUCCEEDED, error="")
    response = world.client(world.owner).post(url("playground:job-retry", world.project, job.pk), follow=True)
    flash = " ".join(tree(response).by_testid("flash")[0].full_text().split())
    assert flash == "Not retried: its status is succeeded, and only failed jobs can be retried."
    assert Job.objects.get(pk=job.pk).status == "succeeded"


def test_it_renders_the_jobs_panel_alone_for_live_refreshes(world: World) -> None:
    _failed_job(world)
    response = world.client(world.member).get(
        url("playground:thread-jobs", world.project, world.thread.pk), headers={"HX-Request": "true"}
    )
    panel = tree(response)
    assert [n.attrs["data-status"] for n in panel.by_testid("job")] == ["failed"]
    assert len(panel.by_testid("job-retry")) == 1
    assert panel.by_testid("stats") == []


# --- playground page ---------------------------------------------------------------------------------


def test_it_shows_the_offline_adapter_and_how_to_set_a_key(world: World) -> None:
    page = tree(world.client(world.member).get(url("playground:playground", world.project, world.thread.pk)))
    note = " ".join(page.by_testid("adapter-note")[0].full_text().split())
    assert "Model: offline." in note and "export GEMINI_API_KEY=your-key" in note
    assert " ".join(page.by_testid("adapter-badge")[0].full_text().split()) == "model: offline"


def test_it_shows_the_gemini_adapter_and_model(world: World, settings: Any) -> None:
    settings.MEMORY_LLM_ADAPTER = "gemini"
    settings.GEMINI_CHAT_MODEL = "gemini-2.5-flash"
    page = tree(world.client(world.member).get(url("playground:playground", world.project, world.thread.pk)))
    note = " ".join(page.by_testid("adapter-note")[0].full_text().split())
    assert note.startswith("Model: Gemini · gemini-2.5-flash.")
    assert " ".join(page.by_testid("adapter-badge")[0].full_text().split()) == (
        "model: gemini · gemini-2.5-flash"
    )


def test_it_wires_the_playground_to_the_chat_and_live_routes(world: World) -> None:
    page = tree(world.client(world.member).get(url("playground:playground", world.project, world.thread.pk)))
    root = page.all(lambda n: n.attrs.get("id") == "live-root")[0]
    pid = world.project.pk
    assert root.attrs["data-chat-url"] == url("playground:chat", world.project, world.thread.pk)
    assert root.attrs["data-ws-path"] == f"/ws/threads/{world.thread.pk}/?projectId={pid}&fragments=1"
    placeholder = root.attrs["data-turn-placeholder"]
    assert root.attrs["data-turn-url-template"].replace(placeholder, "7") == url(
        "playground:turn-context", world.project, 7
    )
    limit = page.by_testid("chat-message-limit")[0]
    assert (limit.attrs["min"], limit.attrs["max"], limit.attrs["value"]) == ("1", "100", "20")


@pytest.mark.parametrize(("threshold", "expected"), [(None, "20"), (6, "20"), (30, "30"), (500, "100")])
def test_it_starts_the_message_limit_at_the_threshold_to_avoid_the_trap(
    world: World, threshold: int | None, expected: str
) -> None:
    working.thread_update(thread=world.thread, changes={"auto_compact_threshold": threshold})
    page = tree(world.client(world.member).get(url("playground:playground", world.project, world.thread.pk)))
    assert page.by_testid("chat-message-limit")[0].attrs["value"] == expected


# --- members ---------------------------------------------------------------------------------------


def test_it_lets_an_owner_add_an_existing_user(world: World) -> None:
    make_user("nina")
    response = world.client(world.owner).post(
        url("playground:members", world.project), {"username": "nina", "role": "member"}
    )
    assert response.status_code == 302
    assert Membership.objects.get(project=world.project, user__username="nina").role == "member"


def test_it_refuses_an_unknown_or_existing_username(world: World) -> None:
    client = world.client(world.owner)
    unknown = client.post(url("playground:members", world.project), {"username": "ghost", "role": "member"})
    assert unknown.status_code == 400
    assert "No user with that username." in unknown.content.decode()
    again = client.post(url("playground:members", world.project), {"username": "mark", "role": "owner"})
    assert again.status_code == 400
    assert "already a member" in again.content.decode()
    assert Membership.objects.get(user=world.member).role == "member"


def test_it_keeps_member_management_to_owners(world: World) -> None:
    make_user("nina")
    client = world.client(world.member)
    page = tree(client.get(url("playground:members", world.project)))
    assert [r.attrs["data-username"] for r in page.by_testid("member-row")] == ["mark", "olivia"]
    assert page.by_testid("member-add-form") == [] and page.by_testid("member-remove") == []
    add = client.post(url("playground:members", world.project), {"username": "nina", "role": "owner"})
    assert add.status_code == 403
    owner_membership = Membership.objects.get(user=world.owner)
    for method in ("get", "post"):
        path = url("playground:member-remove", world.project, owner_membership.pk)
        assert _call(client, method, path).status_code == 403
    assert Membership.objects.filter(project=world.project).count() == 2


def test_it_removes_a_member_after_confirmation(world: World) -> None:
    client = world.client(world.owner)
    path = url("playground:member-remove", world.project, world.member_membership.pk)
    confirm = client.get(path)
    assert confirm.status_code == 200 and tree(confirm).by_testid("member-remove-submit")
    assert Membership.objects.filter(pk=world.member_membership.pk).exists()
    response = client.post(path)
    assert response.status_code == 302
    assert not Membership.objects.filter(pk=world.member_membership.pk).exists()
    # The removed member now gets 404 like any outsider.
    assert world.client(world.member).get(url("playground:threads", world.project)).status_code == 404


def test_it_keeps_the_last_owner(world: World) -> None:
    owner_membership = Membership.objects.get(user=world.owner, project=world.project)
    client = world.client(world.owner)
    path = url("playground:member-remove", world.project, owner_membership.pk)
    assert tree(client.get(path)).by_testid("member-remove-submit") == []
    response = client.post(path, follow=True)
    assert "A project keeps at least one owner." in response.content.decode()
    assert Membership.objects.filter(pk=owner_membership.pk).exists()


# --- API keys -------------------------------------------------------------------------------------------


def test_it_shows_a_new_keys_secret_once_and_stores_only_its_hash(world: World) -> None:
    client = world.client(world.owner)
    created = client.post(url("playground:keys", world.project), {"name": "production"})
    # POST-redirect-GET: the page with the secret is a GET, and the URL carries no secret.
    assert created.status_code == 303
    assert created["Location"] == url("playground:key-created", world.project)
    response = client.get(created["Location"])
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    secret = tree(response).by_testid("key-secret")[0].attrs["value"]
    assert secret not in created["Location"]
    key = ApiKey.objects.get(name="production")
    assert re.fullmatch(rf"mk_{key.prefix}_[A-Za-z0-9_-]+", secret)
    assert key.hash == hashlib.sha256(secret.encode()).hexdigest()
    stored = [str(v) for v in ApiKey.objects.filter(pk=key.pk).values().get().values()]
    assert secret not in stored
    listing = client.get(url("playground:keys", world.project))
    assert secret not in listing.content.decode()
    assert key.prefix in [r.attrs["data-prefix"] for r in tree(listing).by_testid("key-row")]
    # The secret works on the API.
    api = Client().get("/v1/memory/working/threads", headers={"Authorization": f"Bearer {secret}"})
    assert api.status_code == 200


def test_it_shows_the_secret_to_the_next_get_only_and_a_reload_creates_no_key(
    world: World,
) -> None:
    client = world.client(world.owner)
    created = client.post(url("playground:keys", world.project), {"name": "once"})
    first = client.get(created["Location"])
    secret = tree(first).by_testid("key-secret")[0].attrs["value"]
    assert project_views.NEW_KEY_SESSION not in client.session
    reload = client.get(created["Location"], follow=True)
    assert reload.redirect_chain == [(url("playground:keys", world.project), 302)]
    body = reload.content.decode()
    assert secret not in body
    assert tree(reload).by_testid("key-secret") == []
    flash = " ".join(tree(reload).by_testid("flash")[0].full_text().split())
    assert flash.startswith("A key's secret is shown only once")
    assert ApiKey.objects.filter(name="once").count() == 1
    assert ApiKey.objects.count() == 2  # "ci" from the world, and this one


def test_it_keeps_a_new_secret_to_the_project_it_was_created_in(world: World) -> None:
    second = make_project("Beta")
    make_membership(world.owner, second, Membership.Role.OWNER)
    client = world.client(world.owner)
    client.post(url("playground:keys", world.project), {"name": "acme-key"})
    elsewhere = client.get(url("playground:key-created", second))
    assert elsewhere.status_code == 302
    assert elsewhere["Location"] == url("playground:keys", second)
    shown = client.get(url("playground:key-created", world.project))
    assert tree(shown).by_testid("key-secret")[0].attrs["value"].startswith(
        f"mk_{ApiKey.objects.get(name='acme-key').prefix}_"
    )


def test_it_lists_keys_with_prefix_name_and_dates(world: World) -> None:
    page = tree(world.client(world.member).get(url("playground:keys", world.project)))
    row = page.by_testid("key-row")[0]
    text = " ".join(row.full_text().split())
    assert row.attrs["data-prefix"] == world.key.prefix
    assert text.startswith(f"ci mk_{world.key.prefix}_…")
    assert "never" in text


def test_it_keeps_key_management_to_owners(world: World) -> None:
    client = world.client(world.member)
    page = tree(client.get(url("playground:keys", world.project)))
    assert page.by_testid("key-create-form") == [] and page.by_testid("key-revoke") == []
    assert client.post(url("playground:keys", world.project), {"name": "x"}).status_code == 403
    revoke = url("playground:key-revoke", world.project, world.key.pk)
    assert client.get(revoke).status_code == 403
    assert client.post(revoke).status_code == 403
    assert ApiKey.objects.count() == 1
    assert ApiKey.objects.get().revoked is None


def test_it_revokes_a_key_after_confirmation(world: World) -> None:
    _, secret = ApiKey.issue(project=world.project, name="old")
    key = ApiKey.objects.get(name="old")
    client = world.client(world.owner)
    path = url("playground:key-revoke", world.project, key.pk)
    assert tree(client.get(path)).by_testid("key-revoke-submit")
    assert ApiKey.objects.get(pk=key.pk).revoked is None
    response = client.post(path)
    assert response.status_code == 302
    assert response["Location"] == url("playground:keys", world.project)
    assert ApiKey.objects.get(pk=key.pk).revoked is not None
    api = Client().get("/v1/memory/working/threads", headers={"Authorization": f"Bearer {secret}"})
    assert api.status_code == 401
    listing = tree(client.get(url("playground:keys", world.project)))
    assert [r.attrs["data-prefix"] for r in listing.by_testid("revoked-key-row")] == [key.prefix]


# --- settings ------------------------------------------------------------------------------------------


def test_it_lets_an_owner_rename_the_project(world: World) -> None:
    response = world.client(world.owner).post(url("playground:settings", world.project), {"name": "Acme Labs"})
    assert response.status_code == 302
    assert Project.objects.get(pk=world.project.pk).name == "Acme Labs"


def test_it_keeps_settings_to_owners(world: World) -> None:
    client = world.client(world.member)
    assert tree(client.get(url("playground:settings", world.project))).by_testid("settings-form") == []
    assert client.post(url("playground:settings", world.project), {"name": "Mine"}).status_code == 403
    assert Project.objects.get(pk=world.project.pk).name == "Acme"


def test_it_refuses_an_empty_project_name(world: World) -> None:
    response = world.client(world.owner).post(url("playground:settings", world.project), {"name": " "})
    assert response.status_code == 400
    assert Project.objects.get(pk=world.project.pk).name == "Acme"


@pytest.mark.parametrize(("posted", "stored"), [("30", 30), ("0", 0), ("", None), ("525600", 525600)])
def test_it_lets_an_owner_set_the_idle_time_after_which_threads_end(
    world: World, posted: str, stored: int | None
) -> None:
    Project.objects.filter(pk=world.project.pk).update(auto_end_idle_minutes=5)
    response = world.client(world.owner).post(
        url("playground:settings", world.project), {"name": "Acme", "auto_end_idle_minutes": posted}
    )
    assert response.status_code == 302
    assert Project.objects.get(pk=world.project.pk).auto_end_idle_minutes == stored


@pytest.mark.parametrize("posted", ["-1", "525601", "ten", "1.5", "9" * 30])
def test_it_refuses_an_idle_time_out_of_range_naming_the_field(world: World, posted: str) -> None:
    Project.objects.filter(pk=world.project.pk).update(auto_end_idle_minutes=5)
    response = world.client(world.owner).post(
        url("playground:settings", world.project), {"name": "Renamed", "auto_end_idle_minutes": posted}
    )
    assert response.status_code == 400
    assert list(response.context["form"].errors) == ["auto_end_idle_minutes"]
    assert Project.objects.filter(pk=world.project.pk).values_list("name", "auto_end_idle_minutes").get() == (
        "Acme",
        5,
    )


@pytest.mark.parametrize(("minutes", "shown"), [(None, "the server's default"), (0, "never"), (45, "45 minutes")])
def test_it_shows_members_the_idle_time_read_only(world: World, minutes: int | None, shown: str) -> None:
    Project.objects.filter(pk=world.project.pk).update(auto_end_idle_minutes=minutes)
    page = tree(world.client(world.member).get(url("playground:settings", world.project)))
    (idle,) = page.by_testid("settings-idle")
    assert " ".join(idle.full_text().split()) == f"Write idle threads' long-term memory after: {shown}"


def test_it_renders_its_own_404_page_for_a_logged_in_outsider(world: World) -> None:
    response = world.client(world.outsider).get(url("playground:threads", world.project))
    assert response.status_code == 404
    body = " ".join(tree(response).full_text().split())
    assert "Not found" in body and "Acme" not in body


def not_found_page(response: Any) -> None:
    """Asserts ``response`` is the rendered 404.html page in the site's layout, not
    Django's (technical) 404 page."""
    assert response.status_code == 404
    assert response["Content-Type"] == "text/html; charset=utf-8"
    # (With DEBUG on, Django's technical page, an unnamed template, was rendered first for
    # an address no route takes, then replaced.)
    assert [t.name for t in response.templates if t.name][:2] == ["404.html", "base.html"]
    page = tree(response)
    assert [n.full_text() for n in page.all(lambda n: n.tag == "h1")] == ["Not found"]
    assert [n.full_text() for n in page.all(lambda n: n.tag == "title")] == ["Not found · Memory"]
    assert b"urlpatterns" not in response.content and b"Django" not in response.content


def test_it_points_a_new_projects_empty_thread_list_to_its_api_keys(world: World) -> None:
    # A new project has no API key, so "through the API" says where keys are made.
    fresh = make_project("Fresh")
    make_membership(world.owner, fresh, "owner")
    client = world.client(world.owner)
    page = tree(client.get(url("playground:threads", fresh)))
    (empty,) = page.by_testid("threads-empty")
    assert " ".join(empty.full_text().split()) == (
        "No threads yet. Create one with the form, or through the API with one of the project's API keys."
    )
    (link,) = page.by_testid("threads-empty-keys")
    assert link.attrs["href"] == url("playground:keys", fresh)
    keys = client.get(link.attrs["href"])
    assert keys.status_code == 200
    assert [t.name for t in keys.templates][:2] == ["playground/keys.html", "base.html"]


@pytest.mark.parametrize("debug", [True, False])
@pytest.mark.parametrize(
    "path",
    [
        "/dashboard/threads/?projectId=99999999",
        "/dashboard/memory/dataset/?projectId={project}&dataset=nobody",
        "/dashboard/chat/turns/999/?projectId={project}",
        "/dashboard/memory/entities/zzz/?projectId={project}",
        "/dashboard/threads/zzz/",
        "/dashboard/no-such-page/",
        "/dashboard/threads/{other_thread}/?projectId={project}",
    ],
)
def test_it_answers_its_styled_404_page_whatever_debug_says(
    world: World, settings: Any, debug: bool, path: str
) -> None:
    settings.DEBUG = debug
    other_thread = working.thread_create(project=world.other_project, dataset="user_42")
    response = world.client(world.member).get(path.format(project=world.project.pk, other_thread=other_thread.pk))
    not_found_page(response)


def test_it_keeps_the_json_404s_of_the_api_and_the_replay_under_debug(world: World, settings: Any) -> None:
    settings.DEBUG = True
    client = world.client(world.member)
    api = client.get("/v1/memory/working/nope")
    assert (api.status_code, api.json()) == (404, {"error": "Not found"})
    replay = client.post(f"/dashboard/chat/turns/999/replay/?projectId={world.project.pk}")
    assert (replay.status_code, replay.json()) == (404, {"error": "Turn not found"})
    admin = client.get("/admin/nope/")
    assert admin.status_code == 302  # the admin's own answer to a non-staff user


def test_it_pushes_paging_urls_on_the_thread_page_and_not_on_the_playground(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "MESSAGES_PAGE_SIZE", 5)
    _fill(world.thread, 12)
    client = world.client(world.member)
    thread_path = url("playground:thread", world.project, world.thread.pk)
    playground_path = url("playground:playground", world.project, world.thread.pk)

    def link(response: Any) -> Any:
        return tree(response).by_testid("load-older")[0].attrs

    assert link(client.get(thread_path))["hx-push-url"] == "true"
    assert "hx-push-url" not in link(client.get(playground_path))
    from_thread = client.get(thread_path, headers={"HX-Request": "true", "HX-Current-URL": f"http://testserver{thread_path}"})
    from_playground = client.get(
        thread_path, headers={"HX-Request": "true", "HX-Current-URL": f"http://testserver{playground_path}"}
    )
    assert link(from_thread)["hx-push-url"] == "true"
    assert "hx-push-url" not in link(from_playground)


def test_it_shows_a_page_not_a_blank_405_for_a_form_only_address(world: World) -> None:
    client = world.client(world.member)
    for name, args in (("playground:thread-create", []), ("playground:thread-edit", [world.thread.pk])):
        response = client.get(url(name, world.project, *args))
        assert (response.status_code, response["Allow"]) == (405, "POST")
        assert tree(response).all(lambda n: n.tag == "h1")[0].full_text() == "Not a page"
    posted = client.post(url("playground:thread-create", world.project), {})
    assert posted.status_code == 400  # the form's own answer, untouched
