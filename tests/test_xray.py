"""The turn X-ray (memoryapp.xray, playground.xray_views; issue 10 item 1): the stored
exact model input with its sources, the X-ray page and turn list, and replay."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from memoryapp import working
from memoryapp.models import Message, Project, Thread, Turn
from memoryapp.tokens import count_tokens
from playground import selectors
from tests.conftest import World
from tests.fakes.fixtures import fake_gemini_fixture  # noqa: F401
from tests.fakes.gemini_server import FakeGeminiServer
from tests.test_chat import SYSTEM_PROMPT, _gemini_answers, post_chat


@pytest.fixture
def client(world: World) -> Client:
    """The shared world's member of Acme, logged in."""
    return world.client(world.member)


@pytest.fixture
def thread(world: World) -> Thread:
    thread = world.thread
    working.message_append(thread=thread, role="user", content="I'm looking for a family car.")
    working.message_append(thread=thread, role="assistant", content="A hybrid estate would suit a family.")
    return thread


@pytest.fixture
def other_thread(project: Project) -> Thread:
    other = working.thread_create(project=project, dataset="user_42")
    working.message_append(thread=other, role="user", content="My budget for the car is 30000 euros.")
    return other


def _turn(resp: Any) -> Turn:
    assert resp.status_code == 201, resp.content
    return Turn.objects.get(pk=resp.json()["turnId"])


def test_it_stores_the_exact_input_the_model_received_with_sources(
    client: Client, thread: Thread, other_thread: Thread, fake_gemini: FakeGeminiServer, settings: Any
) -> None:
    settings.GEMINI_CONTEXT_WINDOW = 200_000
    fake_gemini.responder = _gemini_answers(["Hybrids hold ", "their value well."])
    turn = _turn(post_chat(client, thread, {"content": "my budget?", "systemPrompt": SYSTEM_PROMPT}))
    reply = fake_gemini.requests[-1]
    stored = turn.context["input"]
    assert stored["systemInstruction"] == reply.system_instruction
    assert [p["source"] for p in stored["systemParts"]] == ["recall", "systemPrompt"]
    recall_part, prompt_part = stored["systemParts"]
    budget = Message.objects.get(thread=other_thread, sequence_number=1)
    assert {"kind": "message", "messageId": str(budget.id), "threadId": str(other_thread.pk),
            "sequenceNumber": 1} in recall_part["items"]
    assert prompt_part == {"source": "systemPrompt", "text": SYSTEM_PROMPT, "items": [],
                           "tokens": count_tokens(SYSTEM_PROMPT)}
    assert [(m["role"], m["content"], m["source"]) for m in stored["messages"]] == [
        ("user", "I'm looking for a family car.", {"kind": "message", "sequenceNumber": 1}),
        ("assistant", "A hybrid estate would suit a family.", {"kind": "message", "sequenceNumber": 2}),
        ("user", "my budget?", {"kind": "message", "sequenceNumber": 3}),
    ]
    assert stored["tools"] == []
    assert stored["contextWindow"] == 200_000
    assert stored["layers"]["systemPrompt"] == count_tokens(SYSTEM_PROMPT)
    assert stored["layers"]["messages"] == sum(count_tokens(m["content"]) for m in stored["messages"])
    assert stored["totalTokens"] == count_tokens(reply.system_instruction) + stored["layers"]["messages"]


def test_it_tags_the_summary_with_the_range_it_covers(client: Client, project: Project) -> None:
    thread = working.thread_create(project=project, dataset="d", auto_compact_threshold=4)
    for n in range(5):
        working.message_append(thread=thread, role="user" if n % 2 == 0 else "assistant", content=f"line {n}")
    turn = _turn(post_chat(client, thread, {"content": "and now?"}))
    window = working.prepare(thread=thread)
    assert window.summary is not None
    head = turn.context["input"]["messages"][0]
    assert head["role"] == "system"
    assert head["source"] == {
        "kind": "summary", "messageId": str(window.summary.message_id),
        "fromSequence": window.summary.from_sequence, "toSequence": window.summary.to_sequence,
    }
    assert turn.context["input"]["contextWindow"] == 32_768  # the offline adapter's default


def test_it_links_each_reply_to_its_xray_page_and_lists_the_turns(
    client: Client, project: Project, thread: Thread
) -> None:
    turn = _turn(post_chat(client, thread, {"content": "hello there"}))
    xray_url = reverse("playground:turn-context", args=[turn.pk]) + f"?projectId={project.pk}"
    thread_page = client.get(reverse("playground:thread", args=[thread.pk]) + f"?projectId={project.pk}")
    assert f'href="{xray_url}"' in thread_page.content.decode()

    page = client.get(xray_url)
    html = page.content.decode()
    assert page.status_code == 200
    assert '<h1 data-testid="page-heading">X-ray of turn 1</h1>' in html  # a plain GET gets the whole page
    assert html.count('data-testid="xray-message"') == 3
    assert 'data-testid="xray-system-instruction"' in html

    fragment = client.get(xray_url, HTTP_HX_REQUEST="true")
    assert "<h1" not in fragment.content.decode()

    listing = client.get(reverse("playground:thread-turns", args=[thread.pk]) + f"?projectId={project.pk}")
    assert listing.status_code == 200
    assert [row["turn"].pk for row in listing.context["turns"]] == [turn.pk]
    assert f'href="{xray_url}"' in listing.content.decode()


def test_it_replays_the_stored_input_side_by_side_without_storing(
    client: Client, project: Project, thread: Thread
) -> None:
    turn = _turn(post_chat(client, thread, {"content": "hello there"}))
    count = Message.objects.filter(thread=thread).count()
    url = reverse("playground:turn-replay", args=[turn.pk]) + f"?projectId={project.pk}"
    resp = client.post(url, {"adapter": "offline"})
    assert resp.status_code == 200
    result = resp.context["result"]
    assert result.adapter == "offline" and result.error == ""
    assert turn.assistant_message is not None
    assert resp.context["original"] == turn.assistant_message.content
    assert result.text.strip() != ""
    html = resp.content.decode()
    assert 'data-testid="replay-original"' in html and 'data-testid="replay-new"' in html
    assert Message.objects.filter(thread=thread).count() == count
    assert Turn.objects.filter(thread=thread).count() == 1


def test_it_refuses_an_unknown_replay_adapter_naming_the_field(
    client: Client, project: Project, thread: Thread
) -> None:
    turn = _turn(post_chat(client, thread, {"content": "hello there"}))
    url = reverse("playground:turn-replay", args=[turn.pk]) + f"?projectId={project.pk}"
    resp = client.post(url, {"adapter": "gpt-9"})
    assert resp.status_code == 400
    assert resp.json() == {
        "error": "Validation error",
        "issues": [
            {"path": ["adapter"], "message": "Input should be 'offline' or 'gemini'", "code": "literal_error"}
        ],
    }


def test_it_hides_a_turn_of_another_project_from_replay(
    client: Client, thread: Thread, world: World
) -> None:
    turn = _turn(post_chat(client, thread, {"content": "hello there"}))
    outsider = world.client(world.outsider)
    url = reverse("playground:turn-replay", args=[turn.pk]) + f"?projectId={world.other_project.pk}"
    assert outsider.post(url, {"adapter": "offline"}).status_code == 404


def _replay_url(turn: Turn, project_id: object) -> str:
    return reverse("playground:turn-replay", args=[turn.pk]) + f"?projectId={project_id}"


def test_replay_answers_every_error_in_the_apis_shape(
    client: Client, project: Project, thread: Thread, world: World
) -> None:
    # Replay answered {"error": {"field", "message"}}, an HTML 404 and a redirect to the
    # login page; the API answers {"error": ..., "issues"?: [...]}.
    turn = _turn(post_chat(client, thread, {"content": "hello there"}))
    url = _replay_url(turn, project.pk)
    not_found = {"error": "Turn not found"}
    for answer in (
        client.post(_replay_url(turn, world.other_project.pk), {"adapter": "offline"}),
        client.post(_replay_url(turn, "1x"), {"adapter": "offline"}),
        client.post(reverse("playground:turn-replay", args=[turn.pk]), {"adapter": "offline"}),
        client.post(reverse("playground:turn-replay", args=[turn.pk + 1000]) + f"?projectId={project.pk}"),
        world.client(world.outsider).post(url, {"adapter": "offline"}),
    ):
        assert (answer.status_code, answer.json()) == (404, not_found)

    signed_out = Client().post(url, {"adapter": "offline"}, HTTP_HX_REQUEST="true")
    assert (signed_out.status_code, signed_out.json()) == (401, {"error": "Unauthorized"})
    assert signed_out["HX-Trigger"] == "memory:signed-out"

    wrong_method = client.get(url)
    assert (wrong_method.status_code, wrong_method.json()) == (405, {"error": "Method not allowed"})
    assert wrong_method["Allow"] == "POST"

    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(world.member)
    refused = csrf.post(url, {"adapter": "offline"})
    assert (refused.status_code, refused.json()) == (403, {"error": "CSRF check failed"})

    call = client.post(url, {"adapter": "offline", "call": "2"})
    assert (call.status_code, call.json()) == (
        400,
        {
            "error": "Validation error",
            "issues": [
                {
                    "path": ["call"],
                    "message": "call must be a whole number from 1 to 1 (this turn's model calls)",
                    "code": "no_such_call",
                }
            ],
        },
    )

    Turn.objects.filter(pk=turn.pk).update(context={})
    stale = client.post(url, {"adapter": "offline"})
    assert (stale.status_code, stale.json()) == (409, {"error": "Turn was stored without its model input"})


def test_a_turns_xray_without_a_project_goes_to_the_turns_project(
    client: Client, project: Project, thread: Thread, world: World
) -> None:
    # It answered 404 ("No such project"): thread pages fill projectId in, the X-ray did not.
    turn = _turn(post_chat(client, thread, {"content": "hello there"}))
    bare = reverse("playground:turn-context", args=[turn.pk])
    response = client.get(bare + "?call=1")
    assert (response.status_code, response["Location"]) == (302, f"{bare}?call=1&projectId={project.pk}")
    # Someone else's turn: their own first project, where the turn is not found.
    outsider = world.client(world.outsider).get(bare)
    assert outsider["Location"] == f"{bare}?projectId={world.other_project.pk}"


def test_it_shows_the_threads_turns_running_cost_and_context_gauge(
    client: Client, project: Project, thread: Thread
) -> None:
    first = _turn(post_chat(client, thread, {"content": "hello there"}))
    second = _turn(post_chat(client, thread, {"content": "and again"}))
    chat = selectors.thread_chat_totals(thread=thread)
    assert chat.turns == 2
    assert chat.cost == first.total_cost + second.total_cost
    assert chat.last_input_tokens == second.context["input"]["totalTokens"]
    assert chat.context_window == 32_768
    stats = client.get(reverse("playground:thread-stats", args=[thread.pk]) + f"?projectId={project.pk}")
    html = stats.content.decode()
    assert f'<meter class="xray-gauge" min="0" max="32768" value="{chat.last_input_tokens}">' in html
    assert 'data-testid="stat-turns"><a href="' in html and ">2</a>" in html


def test_it_labels_each_thread_with_its_title_or_first_user_message(
    client: Client, project: Project, thread: Thread
) -> None:
    titled = working.thread_create(project=project, dataset="d", metadata={"title": "Trip to Lisbon"})
    working.message_append(thread=titled, role="user", content="ignored: the title wins")
    empty = working.thread_create(project=project, dataset="d")
    listing = client.get(reverse("playground:threads") + f"?projectId={project.pk}")
    labels = {row["thread"].pk: row["label"] for row in listing.context["rows"]}
    assert labels == {thread.pk: "I'm looking for a family car.", titled.pk: "Trip to Lisbon", empty.pk: ""}
