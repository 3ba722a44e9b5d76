"""playground.consumers: the live WebSockets of a thread and of a dataset's page, through
the real ASGI stack (origin check, session auth, URL routing; issue 4 item 3, issue 8
item 6, issue 7 item 1). The users and projects are the shared test world
(tests.conftest.world): ``member`` of Acme, ``outsider`` who owns Other."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.db import transaction
from django.test import Client, override_settings
from django.urls import reverse

from memoryapp import compaction, episodic, events, projects, serializers, working
from memoryapp.asgi import application
from memoryapp.chat import chat_turn
from memoryapp.models import Message, Project, Thread
from playground import fragments
from playground.consumers import CLOSE_FORBIDDEN, CLOSE_SIGNED_OUT
from playground.routing import dataset_socket_path, thread_socket_path
from tests.conftest import World
from tests.test_memory_views import civic_then_prius

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT = 5  # seconds to wait for a frame; generous for a busy 2-core machine


@pytest.fixture(autouse=True)
async def fresh_layer() -> AsyncIterator[None]:
    """Each test starts with an empty in-memory channel layer (groups of earlier tests
    belonged to event loops that are gone)."""
    layer = get_channel_layer()
    assert layer is not None
    await layer.flush()
    yield
    await layer.flush()


def _session_cookie(user: User | None) -> str:
    if user is None:
        return ""
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


async def _connect(
    thread_id: Any, project_id: Any, user: User | None, query: str = ""
) -> tuple[WebsocketCommunicator, bool, Any]:
    cookie = await sync_to_async(_session_cookie)(user)
    headers = [(b"origin", b"http://testserver")]
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    communicator = WebsocketCommunicator(
        application, f"/ws/threads/{thread_id}/?projectId={project_id}{query}", headers=headers
    )
    connected, subprotocol = await communicator.connect(timeout=TIMEOUT)
    return communicator, connected, subprotocol


async def _frames_until(communicator: WebsocketCommunicator, event: str) -> list[dict[str, Any]]:
    frames = []
    while True:
        frame = await communicator.receive_json_from(timeout=TIMEOUT)
        frames.append(frame)
        if frame["event"] == event:
            return frames


async def _refused(communicator: WebsocketCommunicator, connected: bool) -> None:
    # Accepted, then closed at once with 4403, so a browser sees the code.
    assert connected is True
    assert await communicator.receive_output(timeout=TIMEOUT) == {
        "type": "websocket.close",
        "code": CLOSE_FORBIDDEN,
    }


async def test_it_forwards_an_api_append_to_a_subscribed_client(world: World, api_key: str) -> None:
    project, thread, user = world.project, world.thread, world.member
    communicator, connected, _ = await _connect(thread.id, project.pk, user)
    try:
        assert connected is True
        api = Client()
        url = f"/v1/memory/working/threads/{thread.id}/messages"
        for content in ("first", "second"):
            resp = await sync_to_async(api.post)(
                url,
                data=json.dumps({"role": "user", "content": content}),
                content_type="application/json",
                headers={"Authorization": f"Bearer {api_key}"},
            )
            assert resp.status_code == 201
        first = await communicator.receive_json_from(timeout=TIMEOUT)
        second = await communicator.receive_json_from(timeout=TIMEOUT)
        row = await Message.objects.aget(thread=thread, sequence_number=2)
        assert first["event"] == "message.appended"
        assert first["data"]["sequenceNumber"] == 1
        assert second == {
            "event": "message.appended",
            "threadId": str(thread.id),
            "data": serializers.message_to_dict(row),
        }
        assert second["data"]["content"] == "second"
        assert await communicator.receive_nothing(timeout=0.1)
    finally:
        await communicator.disconnect()


async def test_it_forwards_a_compaction_to_a_subscribed_client(world: World) -> None:
    project, thread, user = world.project, world.thread, world.member
    await sync_to_async(working.thread_update)(
        thread=thread, changes={"auto_compact_threshold": 3}
    )
    communicator, connected, _ = await _connect(thread.id, project.pk, user)
    try:
        assert connected is True
        for content in ("We have two kids.", "And a dog called Rex.", "Which car fits?"):
            await sync_to_async(compaction.message_append_compacting)(
                thread=thread, role="user", content=content
            )
        frames = await _frames_until(communicator, "thread.compacted")
        summary = await Message.objects.aget(thread=thread, is_summary=True)
        assert [(f["event"], f["data"].get("sequenceNumber")) for f in frames] == [
            ("message.appended", 1),
            ("message.appended", 2),
            ("message.appended", 3),
            ("message.appended", 4),
            ("thread.compacted", None),
        ]
        assert frames[3]["data"]["summary"] == {"fromSequence": 1, "toSequence": 2}
        assert frames[4]["data"] == {
            "threadId": str(thread.id),
            "summaryMessageId": str(summary.id),
            "compactedCount": 2,
            "fromSequence": 1,
            "toSequence": 2,
        }
    finally:
        await communicator.disconnect()


@override_settings(MEMORY_CHAT_FLUSH_MS=60_000)
async def test_it_streams_a_chat_turn_to_a_subscribed_client(world: World) -> None:
    project, thread, user = world.project, world.thread, world.member
    communicator, connected, _ = await _connect(thread.id, project.pk, user)
    try:
        assert connected is True
        body = await sync_to_async(chat_turn)(
            thread=thread, user=user, content="hello there", system_prompt="Be brief."
        )
        frames = await _frames_until(communicator, "chat.done")
        events = [f["event"] for f in frames]
        assert events[0] == "message.appended"  # the user message, stored first
        assert frames[0]["data"]["sequenceNumber"] == 1
        deltas = [f["data"] for f in frames if f["event"] == "chat.delta"]
        # Text is sent in batches (memoryapp.chat.DeltaBatch): the offline model's short
        # reply (under MEMORY_CHAT_FLUSH_CHARS) is one frame when no time bound is due.
        assert len(deltas) == 1
        assert {d["turnId"] for d in deltas} == {body["turnId"]}
        assert "".join(d["text"] for d in deltas) == body["assistantMessage"]["content"]
        assert events[-2:] == ["message.appended", "chat.done"]
        assert frames[-2]["data"]["sequenceNumber"] == 2
        assert frames[-1]["data"] == body
    finally:
        await communicator.disconnect()


# One reply frame; a window long enough that the whole turn is one burst on a busy machine.
@override_settings(MEMORY_CHAT_FLUSH_MS=60_000, MEMORY_LIVE_FRAGMENT_DELAY_MS=1500)
async def test_it_renders_the_panels_once_for_every_tab_that_asks_for_them(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10 item 5: open tabs (?fragments=1) get the messages and stats panels rendered
    once per burst, the very HTML their htmx refresh would have fetched; a socket that did
    not ask gets the events only."""
    project, thread, user = world.project, world.thread, world.member
    renders: list[str] = []
    real_render = fragments.render_thread_fragments

    def counting_render(thread_id: Any) -> str | None:
        renders.append(str(thread_id))
        return real_render(thread_id)

    monkeypatch.setattr(fragments, "render_thread_fragments", counting_render)
    tabs = [(await _connect(thread.id, project.pk, user, "&fragments=1"))[0] for _ in range(2)]
    plain, _, _ = await _connect(thread.id, project.pk, user)
    try:
        body = await sync_to_async(chat_turn)(thread=thread, user=user, content="hello there")
        received = [await _frames_until(tab, "thread.fragments") for tab in tabs]
        for frames in received:
            assert [f["event"] for f in frames] == [
                "message.appended", "chat.delta", "message.appended", "chat.done", "thread.fragments",
            ]
        assert received[0][-1] == received[1][-1]  # one rendering, the same frame for both
        assert renders == [str(thread.id)]
        panels = received[0][-1]
        assert panels["threadId"] == str(thread.id)

        def refreshed() -> tuple[str, str]:
            client = world.client(user)
            query = f"?projectId={project.pk}"
            playground = f"http://testserver/dashboard/threads/{thread.id}/playground/{query}"
            headers = {"HX-Request": "true", "HX-Current-URL": playground}
            messages = client.get(f"/dashboard/threads/{thread.id}/{query}", headers=headers)
            stats = client.get(f"/dashboard/threads/{thread.id}/stats/{query}", headers=headers)
            assert messages.status_code == stats.status_code == 200
            return messages.content.decode(), stats.content.decode()

        messages_html, stats_html = await sync_to_async(refreshed)()
        assert panels["data"] == {"messages": messages_html, "stats": stats_html}
        assert 'data-seq="1"' in messages_html and 'data-seq="2"' in messages_html
        assert body["assistantMessage"]["sequenceNumber"] == 2
        assert [f["event"] for f in await _frames_until(plain, "chat.done")] == [
            "message.appended", "chat.delta", "message.appended", "chat.done",
        ]
        assert await plain.receive_nothing(timeout=0.5)
        for tab in tabs:
            assert await tab.receive_nothing(timeout=0.3)
    finally:
        for communicator in (*tabs, plain):
            await communicator.disconnect()
    assert fragments.hub.subscribers.get(str(thread.id)) is None


async def test_it_refuses_an_anonymous_client(world: World) -> None:
    communicator, connected, _ = await _connect(world.thread.id, world.project.pk, None)
    try:
        await _refused(communicator, connected)
    finally:
        await communicator.disconnect()


async def test_it_refuses_a_client_of_another_project(world: World) -> None:
    # The outsider owns another project: neither project id gets them Acme's thread.
    for project_id in (world.project.pk, world.other_project.pk):
        communicator, connected, _ = await _connect(world.thread.id, project_id, world.outsider)
        try:
            await _refused(communicator, connected)
        finally:
            await communicator.disconnect()
    # Nothing was subscribed: an append reaches no one and fails nothing.
    await sync_to_async(working.message_append)(thread=world.thread, role="user", content="private")


async def test_it_refuses_a_thread_outside_the_given_project(world: World) -> None:
    foreign = await sync_to_async(working.thread_create)(
        project=world.other_project, dataset="user_42"
    )
    communicator, connected, _ = await _connect(foreign.id, world.project.pk, world.member)
    try:
        await _refused(communicator, connected)
    finally:
        await communicator.disconnect()


@pytest.mark.parametrize("project_id", ["", "abc", "-1", "99999999999999999999"])
async def test_it_refuses_a_malformed_project_id(world: World, project_id: str) -> None:
    communicator, connected, _ = await _connect(world.thread.id, project_id, world.member)
    try:
        await _refused(communicator, connected)
    finally:
        await communicator.disconnect()


@pytest.mark.parametrize("thread_id", ["not-a-uuid", "12345", "%20"])
async def test_it_refuses_a_malformed_thread_id(world: World, thread_id: str) -> None:
    communicator, connected, _ = await _connect(thread_id, world.project.pk, world.member)
    try:
        await _refused(communicator, connected)
    finally:
        await communicator.disconnect()


def _arabic_indic(number: int) -> str:
    """``number`` in Arabic-Indic digits, which str.isdigit() takes and int() reads."""
    return "".join(chr(0x660 + int(d)) for d in str(number))


# Python's UUID parser takes all of these; the API's rule (memoryapp.validation.path_id)
# and so the sockets take none of them.
LOOSE_THREAD_IDS = {
    "braces": lambda u: "{" + u + "}",
    "urn": lambda u: f"urn:uuid:{u}",
    "hex": lambda u: u.replace("-", ""),
    "moved-hyphens": lambda u: u.replace("-", "")[:4] + "-" + u.replace("-", "")[4:],
}


@pytest.mark.parametrize("form", sorted(LOOSE_THREAD_IDS))
async def test_it_refuses_a_thread_id_not_in_the_canonical_form(world: World, form: str) -> None:
    # uuid.UUID() read these as the thread: the socket subscribed to a URL no page uses.
    loose = LOOSE_THREAD_IDS[form](str(world.thread.id))
    communicator, connected, _ = await _connect(loose, world.project.pk, world.member, "&fragments=1")
    try:
        await _refused(communicator, connected)
    finally:
        await communicator.disconnect()
    assert fragments.hub.subscribers == {}


@pytest.mark.parametrize("form", ["leading-zero", "plus", "space", "arabic-indic", "superscript"])
async def test_it_refuses_a_project_id_not_written_as_the_dashboard_writes_it(
    world: World, form: str
) -> None:
    # "²".isdigit() is true and int("²") raises (the connect failed with an exception);
    # Arabic-Indic digits read as the project's own number (a silent match).
    pk = world.project.pk
    project_id = {
        "leading-zero": f"0{pk}",
        "plus": f"%2B{pk}",
        "space": f"%20{pk}",
        "arabic-indic": _arabic_indic(pk),
        "superscript": "\u00b2",
    }[form]
    communicator, connected, _ = await _connect(world.thread.id, project_id, world.member)
    try:
        await _refused(communicator, connected)
    finally:
        await communicator.disconnect()
    dataset, connected = await _connect_dataset(project_id, "user_42", world.member)
    await _refused(dataset, connected)


async def test_it_takes_an_upper_case_thread_id_as_the_thread(world: World) -> None:
    # The API's rule takes either case; the socket's group and panels are the thread's own.
    thread = world.thread
    upper = str(thread.id).upper()
    communicator, connected, _ = await _connect(upper, world.project.pk, world.member, "&fragments=1")
    try:
        assert connected is True
        await sync_to_async(working.message_append)(thread=thread, role="user", content="hi")
        frames = await _frames_until(communicator, "message.appended")
        assert frames[-1]["threadId"] == str(thread.id)
        assert set(fragments.hub.subscribers) == {str(thread.id)}
    finally:
        await communicator.disconnect()


# --- a dataset's page (DatasetConsumer; issue 8 item 6) ------------------------------------


async def _connect_dataset(project_id: Any, dataset: str, user: User | None) -> tuple[WebsocketCommunicator, bool]:
    cookie = await sync_to_async(_session_cookie)(user)
    headers = [(b"origin", b"http://testserver")]
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    communicator = WebsocketCommunicator(
        application, f"/ws/datasets/?projectId={project_id}&dataset={dataset}", headers=headers
    )
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    return communicator, connected


async def test_it_sends_a_dataset_page_the_end_of_an_episode_job(world: World) -> None:
    project, thread, user = world.project, world.thread, world.member
    communicator, connected = await _connect_dataset(project.pk, "user_42", user)
    assert connected
    other, other_connected = await _connect_dataset(project.pk, "user_7", user)
    assert other_connected

    def end() -> None:
        working.message_append(thread=thread, role="user", content="I drive a Honda Civic")
        episodic.thread_end(project=project, thread_id=thread.pk)

    await sync_to_async(end)()
    frames = await _frames_until(communicator, "dataset.changed")
    assert frames[-1] == {"event": "dataset.changed", "threadId": str(thread.pk), "data": {}}
    assert await other.receive_nothing(timeout=0.2)
    await communicator.disconnect()
    await other.disconnect()


@pytest.mark.parametrize("action", ["fact-delete", "contradiction-confirm", "contradiction-restore"])
async def test_it_tells_a_dataset_page_of_a_fact_deleted_confirmed_or_restored(
    world: World, action: str
) -> None:
    """Another open page of the dataset hears of a fact review done on the dashboard, once
    per change (an action that changes nothing sends nothing)."""
    project, user = world.project, world.member

    def civic_path() -> str:
        civic, _ = civic_then_prius(world)
        return f"{reverse(f'playground:{action}', args=[civic.pk])}?projectId={project.pk}"

    target = await sync_to_async(civic_path)()
    communicator, connected = await _connect_dataset(project.pk, "user_42", user)
    other, other_connected = await _connect_dataset(project.pk, "user_7", user)
    assert connected and other_connected

    def post() -> int:
        return int(world.client(user).post(target).status_code)

    assert await sync_to_async(post)() == 302
    frame = await communicator.receive_json_from(timeout=TIMEOUT)
    assert frame == {"event": "dataset.changed", "threadId": None, "data": {}}
    assert await sync_to_async(post)() in (302, 404)  # reviewed or deleted already
    assert await communicator.receive_nothing(timeout=0.3)
    assert await other.receive_nothing(timeout=0.1)
    await communicator.disconnect()
    await other.disconnect()


async def test_it_refuses_a_dataset_to_an_outsider_a_visitor_and_no_dataset(world: World) -> None:
    project = world.project
    for project_id, dataset, user in (
        (project.pk, "user_42", world.outsider),
        (project.pk, "user_42", None),
        (project.pk, "", world.member),
    ):
        communicator, connected = await _connect_dataset(project_id, dataset, user)
        await _refused(communicator, connected)


# --- a socket stops the moment its session may no longer see what it shows (issue 7 item 1):
# the thread's socket and the dataset page's, one mechanism (SessionBoundConsumer) ---------

SOCKETS = ["thread", "dataset"]
# What _poke makes each socket receive while it is open.
POKED = {"thread": "message.appended", "dataset": "dataset.changed"}


def _socket_path(socket: str, thread: Thread, project: Project) -> str:
    if socket == "thread":
        return thread_socket_path(thread.id, project)
    return dataset_socket_path(project, thread.dataset)


def _poke(thread: Thread, content: str = "secret") -> None:
    """An event for each kind of socket: an append (the thread's group) and a change of
    the thread's dataset (the dataset's group), sent when this commits."""
    with transaction.atomic():
        working.message_append(thread=thread, role="user", content=content)
        events.dataset_changed(project_id=thread.project_id, dataset=thread.dataset, thread_id=thread.pk)


async def _open_with_client(
    socket: str, thread: Thread, project: Project, user: User
) -> tuple[WebsocketCommunicator, Client]:
    """A subscribed socket and the logged-in test client whose session it uses."""
    client = Client()
    await sync_to_async(client.force_login)(user)
    communicator = _communicator(socket, thread, project, client)
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected is True
    return communicator, client


def _communicator(socket: str, thread: Thread, project: Project, client: Client) -> WebsocketCommunicator:
    return WebsocketCommunicator(
        application,
        _socket_path(socket, thread, project),
        headers=[
            (b"origin", b"http://testserver"),
            (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()),
        ],
    )


async def _closed_and_silent(communicator: WebsocketCommunicator, thread: Thread, code: int) -> None:
    """The socket was closed with ``code`` before any frame, and an event after it (like
    one sent before the close was seen) reaches it no more."""
    assert await communicator.receive_output(timeout=TIMEOUT) == {
        "type": "websocket.close",
        "code": code,
    }
    await sync_to_async(_poke)(thread)
    assert await communicator.receive_nothing(timeout=0.5)


def _logout_then_poke(client: Client, thread: Thread) -> None:
    assert client.post("/logout/").status_code == 302
    _poke(thread, "after logout")


def _flush_session(client: Client) -> None:
    SessionStore(client.cookies["sessionid"].value).flush()


def _expire_session_soon(client: Client) -> None:
    session = SessionStore(client.cookies["sessionid"].value)
    session.set_expiry(1)  # seconds
    session.save()


def _change_password(user: User) -> None:
    user.set_password("a-new-password")
    user.save()


def _remove_membership(world: World) -> None:
    # The world's owner stays, so the member is not the last owner.
    projects.membership_remove(project=world.project, membership_id=world.member_membership.pk)


@pytest.mark.parametrize("socket", SOCKETS)
@pytest.mark.parametrize(
    ("revoke", "code"),
    [
        ("logout", CLOSE_SIGNED_OUT),
        ("flush", CLOSE_SIGNED_OUT),
        ("password", CLOSE_SIGNED_OUT),
        ("membership", CLOSE_FORBIDDEN),
        ("project", CLOSE_FORBIDDEN),
    ],
)
async def test_it_closes_a_socket_whose_session_loses_access(
    world: World, socket: str, revoke: str, code: int
) -> None:
    project, thread, user = world.project, world.thread, world.member
    communicator, client = await _open_with_client(socket, thread, project, user)
    try:
        if revoke == "logout":
            # The event right after the logout must not get through either.
            await sync_to_async(_logout_then_poke)(client, thread)
        elif revoke == "flush":
            await sync_to_async(_flush_session)(client)
        elif revoke == "password":
            await sync_to_async(_change_password)(user)
        elif revoke == "membership":
            await sync_to_async(_remove_membership)(world)
        else:
            thread = await sync_to_async(working.thread_create)(
                project=world.other_project, dataset="d"
            )
            await project.adelete()

        await _closed_and_silent(communicator, thread, code)
    finally:
        await communicator.disconnect()


@pytest.mark.parametrize("socket", SOCKETS)
async def test_it_closes_a_socket_when_its_session_expires(world: World, socket: str) -> None:
    project, thread, user = world.project, world.thread, world.member
    client = Client()
    await sync_to_async(client.force_login)(user)
    await sync_to_async(_expire_session_soon)(client)
    communicator = _communicator(socket, thread, project, client)
    try:
        connected, _ = await communicator.connect(timeout=TIMEOUT)
        assert connected is True

        await _closed_and_silent(communicator, thread, CLOSE_SIGNED_OUT)
    finally:
        await communicator.disconnect()


@pytest.mark.parametrize("socket", SOCKETS)
async def test_it_keeps_a_socket_open_through_another_login_of_its_user(
    world: World, socket: str
) -> None:
    project, thread, user = world.project, world.thread, world.member
    communicator, _ = await _open_with_client(socket, thread, project, user)
    try:
        other_tab = Client()
        await sync_to_async(other_tab.force_login)(user)
        await sync_to_async(_poke)(thread, "hi")

        frame = await communicator.receive_json_from(timeout=TIMEOUT)
        assert frame["event"] == POKED[socket]
        assert frame["threadId"] == str(thread.id)
        if socket == "thread":
            assert frame["data"]["content"] == "hi"
        else:
            assert frame["data"] == {}
    finally:
        await communicator.disconnect()
