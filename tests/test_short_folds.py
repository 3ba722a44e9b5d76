"""Short folds and empty summaries (memoryapp.summary_rules; docs/decisions.md "Short
folds"): compacting "a" or "hi"/"ok" keeps their words as the summary instead of writing
"" or "-", and a model whose summary says nothing fails the run as any bad answer does.
"""

from __future__ import annotations

from typing import Any

import pytest

from memoryapp import compaction, llm
from memoryapp.llm.offline import SUMMARY_HEADER
from memoryapp.llm.port import Summary, Usage
from memoryapp.llm.registry import GuardedModel
from memoryapp.models import CompactionRun, Message, Project
from memoryapp.summary_rules import VERBATIM_HEADER, says_something
from tests.conftest import BASE, Api
from tests.test_notes import make_thread


def url(thread_id: str, action: str) -> str:
    return f"{BASE}/threads/{thread_id}/{action}"


def prepared(api: Api, thread_id: str) -> list[dict[str, str]]:
    resp = api.post(url(thread_id, "prepare"), {})
    assert resp.status_code == 200
    return list(resp.json()["messages"])


class Saying:
    """A summarizer that answers ``text`` whatever it is given, counting its calls."""

    name = "fake"

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls = 0

    def summarize(self, **kwargs: Any) -> Summary:
        self.calls += 1
        return Summary(text=self.text, model="fake-1", usage=Usage(7, 1))


@pytest.fixture
def saying(monkeypatch: pytest.MonkeyPatch) -> Any:
    def install(text: str) -> Saying:
        fake = Saying(text)
        monkeypatch.setattr(llm, "get_model", lambda: GuardedModel(fake))  # type: ignore[arg-type]
        return fake

    return install


def test_a_manual_compact_of_one_letter_keeps_it_word_for_word(api: Api) -> None:
    thread_id = api.create_thread()["threadId"]
    api.append(thread_id, "a")

    resp = api.post(url(thread_id, "compact"))

    assert resp.status_code == 200
    body = resp.json()
    assert (body["compactedCount"], body["fromSequence"], body["toSequence"]) == (1, 1, 1)
    assert prepared(api, thread_id) == [
        {"role": "system", "content": f"{VERBATIM_HEADER}\n- user: a"}
    ]
    assert VERBATIM_HEADER == "Earlier in this conversation (kept word for word):"
    summary = api.get(url(thread_id, "messages")).json()["messages"][-1]
    # No model wrote it and none was paid for.
    assert (summary["model"], summary["tokens"]) == (None, None)
    (run,) = CompactionRun.objects.filter(thread_id=thread_id)
    assert (run.outcome, run.model_called, run.model, run.tokens_input, run.cost) == (
        "succeeded", False, "", 0, 0
    )


def test_auto_compaction_of_short_messages_keeps_their_words(api: Api) -> None:
    thread_id = api.create_thread(autoCompactThreshold=3)["threadId"]
    assert [api.append(thread_id, c).json()["compacted"] for c in ("hi", "ok", "yo")] == [
        False, False, True
    ]
    assert prepared(api, thread_id) == [
        {"role": "system", "content": f"{VERBATIM_HEADER}\n- user: hi\n- user: ok"},
        {"role": "user", "content": "yo"},
    ]
    # The next run rolls the word-for-word summary forward with what it folds.
    api.append(thread_id, "no", role="assistant")
    assert api.append(thread_id, "k").json()["compacted"] is True
    assert prepared(api, thread_id) == [
        {
            "role": "system",
            "content": f"{VERBATIM_HEADER}\n- user: hi\n- user: ok\n- user: yo\n- assistant: no",
        },
        {"role": "user", "content": "k"},
    ]


def test_a_fold_past_the_limit_is_summarised_by_the_model(api: Api, settings: Any) -> None:
    thread_id = api.create_thread()["threadId"]
    api.append(thread_id, "Alice drives a Honda Civic to Lisbon on March 3. " * 4)
    api.append(thread_id, "Bob flies to Porto on May 9 with a budget of 900 euros. " * 4)

    assert api.post(url(thread_id, "compact")).status_code == 200

    (system,) = prepared(api, thread_id)
    assert system["content"].startswith(SUMMARY_HEADER)  # the offline model wrote it
    assert CompactionRun.objects.get(thread_id=thread_id).model_called is True


def test_the_limit_is_a_setting_and_zero_always_summarises(
    api: Api, settings: Any, saying: Any
) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    fake = saying("- user said hi")
    thread_id = api.create_thread()["threadId"]
    api.append(thread_id, "hi")

    assert api.post(url(thread_id, "compact")).status_code == 200

    assert fake.calls == 1
    assert prepared(api, thread_id) == [{"role": "system", "content": "- user said hi"}]


def test_a_short_fold_makes_no_model_call(api: Api, saying: Any) -> None:
    fake = saying("never used")
    thread_id = api.create_thread()["threadId"]
    api.append(thread_id, "hi")
    api.append(thread_id, "ok", role="assistant")

    assert api.post(url(thread_id, "compact")).status_code == 200

    assert fake.calls == 0
    assert prepared(api, thread_id) == [
        {"role": "system", "content": f"{VERBATIM_HEADER}\n- user: hi\n- assistant: ok"}
    ]


@pytest.mark.parametrize("answer", ["", "   ", "-", "- user:", "- user: \n- assistant: ."])
def test_a_summary_that_says_nothing_is_a_failed_model_call(
    api: Api, settings: Any, saying: Any, answer: str
) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    saying(answer)
    thread_id = api.create_thread()["threadId"]
    api.append(thread_id, "hi")

    resp = api.post(url(thread_id, "compact"))

    assert resp.status_code == 502
    assert resp.json() == {
        "error": "Model call failed",
        "kind": "bad_response",
        "detail": f"the summary says nothing ({answer.strip()!r})",
    }
    assert prepared(api, thread_id) == [{"role": "user", "content": "hi"}]
    assert Message.objects.filter(thread_id=thread_id, is_summary=True).count() == 0
    state = api.get(f"{BASE}/threads/{thread_id}").json()["compaction"]
    assert state["lastError"] == f"bad_response: the summary says nothing ({answer.strip()!r})"
    (run,) = CompactionRun.objects.filter(thread_id=thread_id)
    assert run.outcome == "failed"


def test_an_automatic_run_with_an_empty_summary_keeps_the_append_and_retries(
    api: Api, settings: Any, saying: Any
) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    fake = saying("-")
    thread_id = api.create_thread(autoCompactThreshold=2)["threadId"]
    api.append(thread_id, "hi")

    tripping = api.append(thread_id, "ok")

    assert (tripping.status_code, tripping.json()["compacted"]) == (201, False)
    assert prepared(api, thread_id) == [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": "ok"},
    ]
    fake.text = "- user: hi"
    assert api.append(thread_id, "yo").json()["compacted"] is True
    assert prepared(api, thread_id)[0] == {"role": "system", "content": "- user: hi"}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", False),
        ("-\n- ", False),
        ("- user:\n- assistant:", False),
        ("* • ; , .", False),
        ("- user: a", True),
        ("- user: 👍", True),
        ("Summary: the user greeted", True),
    ],
)
def test_says_something(text: str, says: bool) -> None:
    assert says_something(text) is says


def test_an_agent_threads_short_fold_is_kept_word_for_word(project: Project) -> None:
    thread = make_thread(project, max_tokens=1_000_000)
    compaction.message_append_compacting(thread=thread, role="user", content="hi")

    result = compaction.compact(thread_id=thread.pk)

    assert result is not None
    checkpoint = (result.summary.metadata or {})["checkpoint"]
    assert (checkpoint["summary"], checkpoint["modelCalled"]) == (
        f"{VERBATIM_HEADER}\n- user: hi",
        False,
    )
    assert f"{VERBATIM_HEADER}\n- user: hi" in result.summary.content
    assert (result.summary.model, result.summary.tokens_input) == (None, None)
