"""Chat turns are named by their number on their thread (1..N in the order they were
created; playground.selectors.turn_number) on every page that names one: the turn
list, the X-ray page and fragment, and each reply's X-ray link. They were named by
database id, which counts every thread's turns ("Turn 7" on a thread's second turn).
Compaction runs: tests/test_compaction_history_views.py."""

from __future__ import annotations

from memoryapp import working
from memoryapp.models import Thread, Turn
from tests.conftest import World
from tests.test_dashboard_views import Node, tree, url


def _turn(thread: Thread, text: str) -> Turn:
    user = working.message_append(thread=thread, role="user", content=text).message
    reply = working.message_append(thread=thread, role="assistant", content=f"re: {text}").message
    return Turn.objects.create(thread=thread, user_message=user, assistant_message=reply, adapter="offline")


def _texts(nodes: list[Node]) -> list[str]:
    return [" ".join(n.full_text().split()) for n in nodes]


def test_every_page_numbers_turns_on_their_thread(world: World) -> None:
    other = working.thread_create(project=world.project, dataset="user_42")
    ours: list[Turn] = []
    for n in range(1, 4):
        ours.append(_turn(world.thread, f"ours {n}"))
        if n < 3:
            _turn(other, f"theirs {n}")  # ids jump on our thread
    assert [t.pk - ours[0].pk for t in ours] == [0, 2, 4]
    client = world.client(world.member)

    listing = tree(client.get(url("playground:thread-turns", world.project, world.thread.pk)))
    links = listing.by_testid("turn-link")
    assert _texts(links) == ["Turn 3", "Turn 2", "Turn 1"]
    assert [a.attrs["href"] for a in links] == [
        url("playground:turn-context", world.project, t.pk) for t in reversed(ours)
    ]

    second = url("playground:turn-context", world.project, ours[1].pk)
    page = tree(client.get(second))
    assert _texts(page.by_testid("page-heading")) == ["X-ray of turn 2"]
    assert _texts(page.all(lambda n: n.tag == "title"))[0].startswith("Turn 2 ·")
    assert _texts(page.by_testid("turn-heading"))[0].startswith("Turn 2 ")
    assert page.by_testid("turn-context")[0].attrs["aria-label"] == "Context of turn 2"
    fragment = tree(client.get(second, headers={"HX-Request": "true"}))
    assert _texts(fragment.by_testid("turn-heading"))[0].startswith("Turn 2 ")

    thread_page = tree(client.get(url("playground:thread", world.project, world.thread.pk)))
    assert _texts(thread_page.by_testid("message-xray")) == ["X-ray of turn 1", "X-ray of turn 2", "X-ray of turn 3"]
    other_page = tree(client.get(url("playground:thread", world.project, other.pk)))
    assert _texts(other_page.by_testid("message-xray")) == ["X-ray of turn 1", "X-ray of turn 2"]
    playground = tree(client.get(url("playground:playground", world.project, world.thread.pk)))
    assert _texts(playground.by_testid("message-xray")) == ["X-ray of turn 1", "X-ray of turn 2", "X-ray of turn 3"]
