"""Memory notes and their three tools (memoryapp/notes.py; spec 004 "The tools", "Limits")."""

from __future__ import annotations

from typing import Any

import pytest

from memoryapp import agents, notes, working
from memoryapp.models import MemoryNote, MemoryNoteVersion, Message, Project, Thread
from tests.test_concurrency import run_in_threads


def make_thread(project: Project, *, max_open: int | None = 1000, max_tokens: int = 8000, kind: str = "summarize") -> Thread:
    agent, _ = agents.agent_define(
        project=project,
        name="dm",
        system_prompt="You are the dungeon master.",
        memory=None if max_open is None else {"maxOpenTokens": max_open},
        compaction={"type": kind, "maxTokens": max_tokens},
    )
    return working.thread_create(project=project, dataset="user_42", agent=agent)


def call(thread: Thread, tool: str, /, **arguments: Any) -> notes.ToolCallRecord:
    return notes.tool_run(thread_id=thread.pk, name=tool, arguments=arguments)


def note(thread: Thread, name: str) -> MemoryNote:
    return MemoryNote.objects.get(thread=thread, name=name)


@pytest.fixture
def thread(project: Project) -> Thread:
    return make_thread(project)


def test_it_creates_a_closed_note_with_close_memory(thread: Thread) -> None:
    rec = call(thread, "close_memory", name="quest", description="What the player wants", content="Find the key.")
    assert (rec.outcome.is_error, rec.outcome.result) == (False, "Saved new memory 'quest' (closed).")
    n = note(thread, "quest")
    assert (n.description, n.content, n.is_open, n.tokens, n.bytes) == (
        "What the player wants", "Find the key.", False, 4, 5 + 21 + 13,
    )
    v = MemoryNoteVersion.objects.get(thread=thread)
    assert (v.name, v.version, v.author, v.action, v.content) == ("quest", 1, "agent", "created", "Find the key.")


def test_it_needs_description_and_content_to_create(thread: Thread) -> None:
    rec = call(thread, "close_memory", name="quest", content="Find the key.")
    assert rec.outcome.is_error
    assert rec.outcome.result == (
        "Error: there is no memory named 'quest' yet; creating one needs both description and "
        "content (missing: description). Memories that exist: (none yet)."
    )
    assert not MemoryNote.objects.exists()


def test_it_refuses_close_on_a_closed_note_and_changes_nothing(thread: Thread) -> None:
    call(thread, "close_memory", name="quest", description="Goal", content="Find the key.")
    before = note(thread, "quest")
    rec = call(thread, "close_memory", name="quest", content="Overwritten blind.")
    assert rec.outcome.is_error
    assert rec.outcome.result == (
        "Error: memory 'quest' is closed, and a closed memory cannot be written unseen. "
        "Call open_memory with name 'quest' first, then close_memory to save it."
    )
    after = note(thread, "quest")
    assert (after.content, after.version, after.updated_at, after.is_open) == (
        before.content, before.version, before.updated_at, False,
    )
    assert MemoryNoteVersion.objects.count() == 1


def test_it_opens_a_note_and_returns_its_content(thread: Thread) -> None:
    call(thread, "close_memory", name="quest", description="Goal", content="Find the key.")
    rec = call(thread, "open_memory", name="quest")
    assert (rec.outcome.is_error, rec.outcome.result) == (False, "Find the key.")
    assert note(thread, "quest").is_open is True


def test_it_reports_an_already_open_note_without_error(thread: Thread) -> None:
    call(thread, "close_memory", name="quest", description="Goal", content="Find the key.")
    call(thread, "open_memory", name="quest")
    rec = call(thread, "open_memory", name="quest")
    assert (rec.outcome.is_error, rec.outcome.result) == (
        False, "Memory 'quest' is already open. Its content:\n\nFind the key.",
    )


def test_it_lists_existing_names_when_opening_an_unknown_note(thread: Thread) -> None:
    call(thread, "close_memory", name="quest", description="Goal", content="Find the key.")
    call(thread, "close_memory", name="npcs", description="People", content="Ferryman: wary.")
    rec = call(thread, "open_memory", name="sister")
    assert rec.outcome.is_error
    assert rec.outcome.result == (
        "Error: there is no memory named 'sister'. Memories that exist: quest, npcs. "
        "To create it, call close_memory with a description and content."
    )


def test_it_keeps_the_other_field_on_a_partial_update(thread: Thread) -> None:
    call(thread, "close_memory", name="quest", description="Goal", content="Find the key.")
    call(thread, "open_memory", name="quest")
    rec = call(thread, "close_memory", name="quest", content="Find the silver key.")
    assert rec.outcome.result == "Saved memory 'quest' and closed it. Its description was kept."
    n = note(thread, "quest")
    assert (n.description, n.content, n.is_open, n.version) == ("Goal", "Find the silver key.", False, 2)
    call(thread, "open_memory", name="quest")
    call(thread, "close_memory", name="quest", description="The player's goal")
    n = note(thread, "quest")
    assert (n.description, n.content, n.version) == ("The player's goal", "Find the silver key.", 3)
    assert [(v.version, v.action) for v in MemoryNoteVersion.objects.all()] == [
        (1, "created"), (2, "updated"), (3, "updated"),
    ]


def test_it_tells_an_existing_note_to_leave_an_empty_field_out(thread: Thread) -> None:
    call(thread, "close_memory", name="quest", description="Goal", content="Find the key.")
    call(thread, "open_memory", name="quest")
    rec = call(thread, "close_memory", name="quest", description=" ", content="Find the silver key.")
    assert (rec.outcome.is_error, rec.outcome.result) == (
        True, "Error: 'description' must not be empty; leave it out to keep the current one."
    )
    n = note(thread, "quest")
    assert (n.description, n.content, n.is_open, n.version) == ("Goal", "Find the key.", True, 1)


def test_it_closes_an_open_note_unchanged_without_fields(thread: Thread) -> None:
    call(thread, "close_memory", name="quest", description="Goal", content="Find the key.")
    call(thread, "open_memory", name="quest")
    rec = call(thread, "close_memory", name="quest")
    assert (rec.outcome.is_error, rec.outcome.result) == (False, "Closed memory 'quest' unchanged.")
    assert (note(thread, "quest").is_open, note(thread, "quest").version) == (False, 1)


def test_it_names_what_to_close_when_opening_over_budget(project: Project) -> None:
    thread = make_thread(project, max_open=10, max_tokens=1000)
    call(thread, "close_memory", name="quest", description="Goal", content="one two three four five six")
    call(thread, "close_memory", name="npcs", description="People", content="alpha beta gamma delta")
    assert not call(thread, "open_memory", name="quest").outcome.is_error
    rec = call(thread, "open_memory", name="npcs")
    assert rec.outcome.is_error
    assert rec.outcome.result == (
        "Error: opening 'npcs' (6 tokens) would bring your open memories to 13 tokens, over "
        "maxOpenTokens 10. Close one of these first with close_memory: quest (7 tokens)."
    )
    assert note(thread, "npcs").is_open is False


def test_it_refuses_content_that_could_never_be_opened_again(project: Project) -> None:
    thread = make_thread(project, max_open=10, max_tokens=1000)
    rec = call(thread, "close_memory", name="quest", description="Goal", content="x" * 44)
    assert rec.outcome.result == (
        "Error: the content is 11 tokens, over maxOpenTokens 10, so it could never be opened "
        "again. Shorten it, or split it into several memories."
    )
    assert not MemoryNote.objects.exists()


def test_it_counts_cjk_conservatively_against_max_open_tokens(project: Project) -> None:
    thread = make_thread(project, max_open=10, max_tokens=1000)
    # 11 CJK characters are 11 bytes*3 but, more to the point, at least 11 tokens.
    rec = call(thread, "close_memory", name="place", description="Where", content="東京の古い図書館で会議")
    assert rec.outcome.is_error
    assert rec.outcome.result.startswith("Error: the content is 12 tokens, over maxOpenTokens 10")
    assert not call(thread, "close_memory", name="place", description="Where", content="東京で会議").outcome.is_error


def test_it_refuses_350000_emoji_by_bytes_not_characters(project: Project) -> None:
    thread = make_thread(project, max_open=400_000, max_tokens=1_000_000)
    content = "😀" * 350_000  # 350,000 characters (under 1,048,576) but 1,400,000 bytes
    rec = call(thread, "close_memory", name="faces", description="Emoji", content=content)
    assert rec.outcome.is_error
    assert rec.outcome.result == (
        "Error: refused, the memory store would be 1,400,010 bytes, over its cap of 1,048,576 "
        "bytes (it holds 0 bytes now; this memory would take 1,400,010). Write less, or delete "
        "a memory you no longer need with delete_memory (open it first)."
    )
    assert not MemoryNote.objects.exists()


def test_it_deletes_only_an_open_note(thread: Thread) -> None:
    call(thread, "close_memory", name="quest", description="Goal", content="Find the key.")
    rec = call(thread, "delete_memory", name="quest")
    assert rec.outcome.result == (
        "Error: memory 'quest' is closed; nothing is deleted unseen. Call open_memory with "
        "name 'quest' first, then delete_memory."
    )
    assert MemoryNote.objects.count() == 1
    call(thread, "open_memory", name="quest")
    rec = call(thread, "delete_memory", name="quest")
    assert (rec.outcome.is_error, rec.outcome.result) == (False, "Deleted memory 'quest'.")
    assert not MemoryNote.objects.exists()
    assert [(v.action, v.content) for v in MemoryNoteVersion.objects.all()] == [
        ("created", "Find the key."), ("deleted", "Find the key."),
    ]
    rec = call(thread, "delete_memory", name="quest")
    assert rec.outcome.result == (
        "Error: there is no memory named 'quest'. Memories that exist: (none yet). Nothing was deleted."
    )


@pytest.mark.parametrize(
    ("name", "arguments", "result"),
    [
        ("open_memory", {}, "Error: pass the memory's name as a string in the argument 'name'."),
        ("open_memory", {"name": 7}, "Error: pass the memory's name as a string in the argument 'name'."),
        ("open_memory", {"name": "two words"}, "Error: 'two words' is not a valid memory name; a name is "
         "1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit."),
        ("recall_memory", {"name": "x"}, "Error: there is no tool named 'recall_memory'. Memory tools: "
         "open_memory, close_memory, delete_memory."),
        ("close_memory", {"name": "q", "description": "a\nb", "content": "c"},
         "Error: 'description' must be one line; put details in the content."),
        ("open_memory", {"name": ""}, "Error: 'name' must not be empty; pass the memory's name."),
        ("close_memory", {"name": " "}, "Error: 'name' must not be empty; pass the memory's name."),
        ("close_memory", {"name": "q", "description": "d", "content": "  "},
         "Error: 'content' must not be empty; a new memory needs a description and content "
         "that say something."),
        ("close_memory", {"name": "q", "description": "", "content": "c"},
         "Error: 'description' must not be empty; a new memory needs a description and content "
         "that say something."),
        ("close_memory", {"name": "q", "description": "d", "content": 5}, "Error: 'content' must be a string."),
    ],
)
def test_it_answers_bad_calls_with_a_tool_error(thread: Thread, name: str, arguments: dict[str, Any], result: str) -> None:
    rec = call(thread, name, **arguments)
    assert (rec.outcome.is_error, rec.outcome.result) == (True, result)
    assert not MemoryNote.objects.exists()


def test_it_records_every_call_and_its_result_in_order(thread: Thread) -> None:
    call(thread, "close_memory", name="quest", description="Goal", content="Find the key.")
    call(thread, "close_memory", name="quest", content="blind")
    rows: list[Any] = list(
        Message.objects.filter(thread=thread).values_list("sequence_number", "role", "content", "metadata")
    )
    call_id_1 = rows[0][3]["toolCall"]["id"]
    call_id_2 = rows[2][3]["toolCall"]["id"]
    assert [r[:3] for r in rows] == [
        (1, "assistant", 'close_memory({"name": "quest", "description": "Goal", "content": "Find the key."})'),
        (2, "tool", "Saved new memory 'quest' (closed)."),
        (3, "assistant", 'close_memory({"name": "quest", "content": "blind"})'),
        (4, "tool", rows[3][2]),
    ]
    assert rows[1][3] == {"agentName": "dm", "toolResult": {"id": call_id_1, "name": "close_memory", "isError": False}}
    assert rows[3][3]["toolResult"] == {"id": call_id_2, "name": "close_memory", "isError": True}
    assert rows[0][3]["toolCall"]["arguments"] == {"name": "quest", "description": "Goal", "content": "Find the key."}


def test_it_renders_the_context_block_for_one_open_and_two_closed_notes(thread: Thread) -> None:
    call(thread, "close_memory", name="quest", description="What the player is trying to do right now, and why",
         content="Retrieve the silver key from the drowned chapel. Mara believes it opens her\nsister's house in Ashmere.")
    call(thread, "close_memory", name="npcs", description="Everyone Mara has met and what they think of her",
         content="The ferryman: wary.")
    call(thread, "close_memory", name="inventory", description="What Mara is carrying", content="A lantern.")
    call(thread, "open_memory", name="quest")
    block = notes.context_block(
        summary="The player (Mara) reached the drowned chapel and bargained with the ferryman…",
        notes=list(MemoryNote.objects.filter(thread=thread)),
    )
    assert block == (
        "[Context — written by the platform, not said by anyone. Play continues from the messages after this one.]\n"
        "\n"
        "## Summary of earlier conversation\n"
        "\n"
        "The player (Mara) reached the drowned chapel and bargained with the ferryman…\n"
        "\n"
        "## Open memories — current as of this point\n"
        "\n"
        "### quest — What the player is trying to do right now, and why\n"
        "Retrieve the silver key from the drowned chapel. Mara believes it opens her\n"
        "sister's house in Ashmere.\n"
        "\n"
        "## Closed memories — call open_memory to read one\n"
        "\n"
        "- npcs — Everyone Mara has met and what they think of her\n"
        "- inventory — What Mara is carrying\n"
        "\n"
        "[End of context]"
    )


def test_it_does_not_repeat_the_summary_title_a_summariser_wrote_itself() -> None:
    summary = "Summary of earlier conversation (offline extractive summary):\n- user: I live in Lyon."
    assert notes.context_block(summary=summary, notes=[]) == (
        "[Context — written by the platform, not said by anyone. Play continues from the messages after this one.]\n\n"
        "## Summary of earlier conversation\n\n- user: I live in Lyon.\n\n[End of context]"
    )
    kept = "Summary of earlier conversation: the user lives in Lyon."
    assert f"## Summary of earlier conversation\n\n{kept}\n" in notes.context_block(summary=kept, notes=[])


def test_it_leaves_empty_sections_out_of_the_context_block() -> None:
    assert notes.context_block(summary=None, notes=[]) == (
        "[Context — written by the platform, not said by anyone. Play continues from the messages after this one.]\n\n"
        "Earlier messages of this conversation were dropped from the context.\n\n[End of context]"
    )


# Runs on SQLite as well; marked so a PostgreSQL run (-m postgres) includes it.
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_it_serializes_20_parallel_close_calls_and_never_passes_the_cap(settings: Any) -> None:
    """20 writers of 60,000-byte notes into a 1,000,000-byte store: exactly 16 fit."""
    settings.MEMORY_NOTES_STORE_CAP_BYTES = 1_000_000
    project = Project.objects.create(slug="par", name="Par")
    thread = make_thread(project, max_open=400_000, max_tokens=1_000_000)
    body = "abcd " * 12_000  # 60,000 bytes, 15,000 tokens

    def work(i: int) -> notes.ToolCallRecord:
        return notes.tool_run(
            thread_id=thread.pk, name="close_memory",
            arguments={"name": f"n{i:02d}", "description": f"part {i:02d}", "content": body},
        )

    records = run_in_threads(20, work)
    accepted = [r for r in records if not r.outcome.is_error]
    refused = [r for r in records if r.outcome.is_error]
    per_note = 3 + 7 + 60_000
    assert (len(accepted), len(refused)) == (16, 4)
    assert notes.store_bytes(thread.pk) == 16 * per_note <= 1_000_000
    for n in MemoryNote.objects.filter(thread=thread):
        assert (n.content, n.bytes) == (body, per_note)
    for r in refused:
        assert r.outcome.result.startswith(f"Error: refused, the memory store would be {17 * per_note:,} bytes")
    # Each call sits right before its own result, in the order the calls ran.
    rows = list(Message.objects.filter(thread=thread).order_by("sequence_number"))
    assert [m.sequence_number for m in rows] == list(range(1, 41))
    for call_row, result_row in zip(rows[::2], rows[1::2], strict=True):
        assert call_row.metadata and result_row.metadata
        assert call_row.metadata["toolCall"]["id"] == result_row.metadata["toolResult"]["id"]


def test_it_answers_unstorable_arguments_with_a_tool_error(thread: Thread) -> None:
    rec = call(thread, "close_memory", name="quest", description="Goal", content="a\x00b")
    assert (rec.outcome.is_error, rec.outcome.result) == (
        True, "Error: the argument 'content' cannot be stored (text must not contain NUL characters).",
    )
    assert rec.call_message.metadata is not None
    assert rec.call_message.metadata["toolCall"]["arguments"] == {}
    assert not MemoryNote.objects.exists()


def test_it_names_a_nested_unstorable_argument_in_the_tool_error(thread: Thread) -> None:
    rec = call(thread, "open_memory", name="quest", extra={"items": [1, float("nan")]})
    assert (rec.outcome.is_error, rec.outcome.result) == (
        True, "Error: the argument 'extra.items[1]' cannot be stored (numbers must be finite (no NaN or Infinity)).",
    )
    assert rec.call_message.metadata is not None
    assert rec.call_message.metadata["toolCall"]["arguments"] == {}


# --- every recorded call and result within the message limit (review item 9) -------------


def test_it_records_a_refused_call_too_large_to_store_cut_to_a_preview(project: Project) -> None:
    # A 1.1 MB description was refused (over 300 characters) yet stored whole as the call's
    # message (1,100,063 bytes, past the 1 MiB every append is held to), which then made
    # the agent's thread compact.
    thread = make_thread(project)
    outcome = agents.thread_tool_call(
        project=project, thread_id=thread.pk, name="close_memory",
        arguments={"name": "quest", "description": "d" * 1_100_000, "content": "Find the key."},
    )
    rec = outcome.record
    assert (rec.outcome.is_error, rec.outcome.result) == (
        True, "Error: 'description' is 1100000 characters; keep it to one line of at most 300.",
    )
    preview = "d" * 200 + "… [1,100,000 bytes, cut from this record]"
    cut = {"name": "quest", "description": preview, "content": "Find the key."}
    assert rec.call_message.content == f'close_memory({{"name": "quest", "description": "{preview}", "content": "Find the key."}})'
    assert rec.call_message.metadata is not None
    assert rec.call_message.metadata["toolCall"]["arguments"] == cut
    assert rec.arguments == cut
    stored = Message.objects.get(pk=rec.call_message.pk)
    assert stored.metadata is not None
    assert (len(stored.content.encode()), stored.metadata["toolCall"]["arguments"]) == (321, cut)
    assert outcome.compaction.runs == ()  # nothing near the agent's 8,000-token budget
    assert not MemoryNote.objects.exists()


def test_it_refuses_a_call_the_tool_would_take_when_its_record_is_too_large(project: Project, settings: Any) -> None:
    thread = make_thread(project)
    call(thread, "close_memory", name="quest", description="Goal", content="Find the key.")
    call(thread, "open_memory", name="quest")
    settings.MEMORY_MAX_CONTENT_BYTES = 2000
    # 66 + 1,990 + 3 = 2,059 bytes as recorded: within the note's own rules, not one message's.
    rec = call(thread, "close_memory", name="quest", description="Goal", content="x" * 1990)
    assert (rec.outcome.is_error, rec.outcome.result) == (
        True,
        "Error: this call is 2,059 bytes as recorded in your history, over the limit of 2,000 bytes "
        "for one message, so nothing was done. Write less per call: split the content into several memories.",
    )
    # Nothing was done: the note is still open with its old content, no version was kept.
    assert (note(thread, "quest").content, note(thread, "quest").is_open, note(thread, "quest").version) == (
        "Find the key.", True, 1,
    )
    assert MemoryNoteVersion.objects.count() == 1
    assert rec.call_message.content == (
        'close_memory({"name": "quest", "description": "Goal", "content": "'
        + "x" * 200 + '… [1,990 bytes, cut from this record]"})'
    )
    # A record whose cut strings still do not fit keeps no arguments.
    many = {f"k{i}": "v" for i in range(400)}
    rec = call(thread, "close_memory", name="quest", **many)
    assert rec.call_message.content == 'close_memory({})'
    assert rec.outcome.result.startswith("Error: this call is 5,121 bytes as recorded")
    sizes = [len(m.content.encode()) for m in Message.objects.filter(thread=thread)]
    assert max(sizes) <= 2000


def test_it_cuts_a_result_larger_than_one_message_and_says_so(project: Project, settings: Any) -> None:
    thread = make_thread(project, max_open=3900)
    call(thread, "close_memory", name="lore", description="World", content="é" * 1500)  # 3,000 bytes
    settings.MEMORY_MAX_CONTENT_BYTES = 2000  # a store cap above the message limit
    rec = call(thread, "open_memory", name="lore")
    tail = "\n\n[Cut: this result is 3,000 bytes, over the limit of 2,000 bytes for one message.]"
    assert rec.outcome.result == "é" * 1500  # what the tool answered
    assert rec.result_message.content == "é" * ((2000 - len(tail)) // 2) + tail
    assert len(rec.result_message.content.encode()) <= 2000
    assert rec.to_dict()["result"] == rec.result_message.content


def test_notes_keep_their_creation_order_after_updates(thread: Thread) -> None:
    """GET notes lists notes in creation order, as its docstring says, after updates too.
    The reads had no ORDER BY, so the order was whatever plan the database chose (on
    PostgreSQL an updated row is a new row version); this passed before on both databases
    here and pins the contract."""
    for name in ("alpha", "beta", "gamma"):
        call(thread, "close_memory", name=name, description=f"about {name}", content=f"{name} v1")
    call(thread, "open_memory", name="alpha")
    call(thread, "close_memory", name="alpha", content="alpha v2")
    assert [n["name"] for n in notes.notes_view(thread=thread)["notes"]] == ["alpha", "beta", "gamma"]
