"""The offline adapter's use of the memory tools, on plain cues (spec 004; issue 9 item 6).

So the whole agent-memory feature can be seen and browser-tested without a key, the
offline model calls the memory tools deterministically when the user's last message
says so and the tools are offered:

- **"remember that <fact>"** (any request to remember that opens or closes a sentence,
  memoryapp.llm.remember_cue: "please note my ...", "I'm vegan, don't forget it"; a bare
  "Remember that!" keeps the sentences before it in the message): when its input shows
  no memory ``notes``, ``close_memory`` creating it (a description and ``- <fact>``), as
  the tool's description says a new memory is made; when it shows one,
  ``open_memory({"name": "notes"})`` and then ``close_memory`` writing it back with
  ``- <fact>`` added. Then a text reply saying it was saved. The fact is written as the
  assistant would say it back (in_second_person: "my sister is Mara" -> "your sister is
  Mara"), so the recall reply below quotes it naturally. A request with nothing to
  remember ("remember that", "please remember!") calls nothing and asks what to remember;
  a sentence that only mentions remembering ("I remember my first car") is no cue.
- **"what do you know about <topic>"**: when its input shows no memory ``notes``, a text
  reply saying it has nothing in memory; else ``open_memory({"name": "notes"})``, then
  ``close_memory({"name": "notes"})`` (closing it unchanged), then a text reply with the
  note's lines that mention the topic. The topic is the user's words and the note the
  assistant's (in_second_person): "my wife" is the note's "your wife"; "me" (I, my,
  myself) alone is the user, every line about "you"/"your"; "you" alone is the assistant,
  every line about "I"/"me"/"my"; replies name the topic as the assistant would ("says
  nothing about you" for "me").

What its input shows (``notes_state``): the context block at the head of the
conversation (the checkpoint lists every memory, open or closed; spec 004 "What the
agent sees"), then each memory tool call on ``notes`` in the history since, with its
result. An input that hides an existing note (a window cut short by messageLimit) makes
the create refused as "closed"; it then opens the note and writes it, as a model would.

Each step is decided from the messages after the user's last one (the calls and results
of this turn), so a turn is a fixed sequence for a given store.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memoryapp.llm.port import ChatMessage, ToolCall, ToolResult, ToolSpec
from memoryapp.llm.remember_cue import names_something, remembered
from memoryapp.stopwords import FUNCTION_WORDS

NOTE_NAME = "notes"
NOTE_DESCRIPTION = "Things the user asked me to remember"
#: The reply to a request to remember that names nothing.
ASK_WHAT = "[offline model] What should I remember? Say it after \"remember that\"."
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_RECALL = re.compile(r"\bwhat do you know about\s+(?P<topic>[^?!.\n]+)", re.IGNORECASE)
_ALREADY_OPEN = re.compile(r"^Memory '[^']*' is already open\. Its content:\n\n", re.DOTALL)
_WORD = re.compile(r"\w+", re.UNICODE)


def to_remember(said: str) -> str | None:
    """What the user's message ``said`` asks to be remembered, as they said it: the
    statement of its first request (memoryapp.llm.remember_cue.remembered) and the rest of
    that line ("Remember that my sister is Mara. She is 30." -> "my sister is Mara. She is
    30."); for a request naming nothing, the line's sentences before it ("I'm vegan.
    Remember that!" -> "I'm vegan."), else ``""``; None when ``said`` makes no request."""
    for line in said.splitlines():
        parts = _SENTENCE_END.split(line.strip())
        for i, sentence in enumerate(parts):
            statement = remembered(sentence)
            if statement is None:
                continue
            if statement:
                return " ".join([statement, *parts[i + 1 :]])
            before = " ".join(parts[:i])
            return before if names_something(before) else ""
    return None


# The speaker's words and the listener's, each said by the other: "my" is "your" once
# the assistant says it back. "you" is "I" as a subject (opening the text or a clause),
# else "me"; a verb agreeing with "I"/"you" changes with it ("I am" -> "you are").
_SWAPS = {
    "i am": "you are", "i was": "you were", "i'm": "you're", "i've": "you've", "i'd": "you'd",
    "i'll": "you'll", "i": "you", "me": "you", "my": "your", "mine": "yours", "myself": "yourself",
    "you are": "I am", "you were": "I was", "you're": "I'm", "you've": "I've", "you'd": "I'd",
    "you'll": "I'll", "your": "my", "yours": "mine", "yourself": "myself",
}
_PERSON = re.compile(
    r"(?<![\w'\u2019])(?:I am|I was|you are|you were|I['\u2019](?:m|ve|d|ll)|you['\u2019](?:re|ve|d|ll)|"
    r"I|me|my|mine|myself|you|your|yours|yourself)(?![\w'\u2019])",
    re.IGNORECASE,
)
_CLAUSE_OPENING = re.compile(
    r"(?:^|[.!?;:,]|\b(?:that|and|but|or|because|so|when|if|while|since|though|although))\s*$",
    re.IGNORECASE,
)
_SENTENCE_OPENING = re.compile(r"(?:^|[.!?])\s*$")


def in_second_person(text: str) -> str:
    """``text``, the user's words, as the assistant says them back to the user: first
    person to second ("my sister" -> "your sister", "I'm" -> "you're", "I am" -> "you
    are", "me"/"mine"/"myself" -> "you"/"yours"/"yourself") and second to first ("your"
    -> "my", "you" -> "I" as a subject, else "me"). A word opening a sentence stays
    capitalised, "I" always is; other words are as written."""

    def swap(match: re.Match[str]) -> str:
        said = match.group(0)
        before = text[: match.start()]
        key = " ".join(said.lower().replace("\u2019", "'").split())
        out = ("I" if _CLAUSE_OPENING.search(before) else "me") if key == "you" else _SWAPS[key]
        if _SENTENCE_OPENING.search(before) and said[:1].isupper():
            return out[:1].upper() + out[1:]
        return out

    return _PERSON.sub(swap, text)


# Who a note line (in the assistant's words) is about: the user ("you", "your", "you're")
# or the assistant ("I", "me", "my").
_THE_USER = re.compile(r"(?<![\w'])you(?:r|rs|rself)?(?![\w])", re.IGNORECASE)
_THE_ASSISTANT = re.compile(r"(?<![\w'])(?:I|me|my|mine|myself)(?![\w'])|(?<![\w'])I'", re.IGNORECASE)


def _told(topic: str) -> str:
    """``topic``, the user's words after "about", as the assistant says them: "me" ->
    "you", "my wife" -> "your wife", "you" -> "me"."""
    return in_second_person(f"about {topic.strip()}")[len("about ") :]


def about(topic: str, lines: Sequence[str]) -> list[str]:
    """The note ``lines`` (the assistant's words) about ``topic`` (the user's words after
    "what do you know about"), in order: those sharing a word of three letters or more
    with it, its persons and function words aside ("me and my wife" -> lines with
    "wife"); for a topic that is
    only a person, the lines about that person as the note says it: "me", "myself" ->
    the lines with "you"/"your" (the user), "you", "yourself" -> those with
    "I"/"me"/"my" (the assistant)."""
    told = _told(topic)
    persons = {"you", "your", "yours", "yourself", "i", "me", "my", "mine", "myself"}
    words = {w.lower() for w in _WORD.findall(told) if len(w) > 2} - persons - FUNCTION_WORDS
    if words:
        return [ln for ln in lines if words & {w.lower() for w in _WORD.findall(ln)}]
    if _THE_USER.search(told):
        return [ln for ln in lines if _THE_USER.search(ln)]
    if _THE_ASSISTANT.search(told):
        return [ln for ln in lines if _THE_ASSISTANT.search(ln)]
    return []


def _turn(messages: Sequence[ChatMessage]) -> tuple[str, list[ToolResult]]:
    """The user's last message and the tool results after it."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            after = messages[i + 1 :]
            return messages[i].content, [m.tool_result for m in after if m.tool_result is not None]
    return "", []


_BLOCK_OPENING = "[Context — written by the platform"
_OPEN_SECTION = "## Open memories"
_CLOSED_SECTION = "## Closed memories"


def _block_state(block: str) -> str:
    """``"open"``, ``"closed"`` or ``"absent"``: where the context block lists ``notes``."""
    section = ""
    for line in block.splitlines():
        if line.startswith("## "):
            section = line
        elif section.startswith(_OPEN_SECTION) and line.startswith(f"### {NOTE_NAME} — "):
            return "open"
        elif section.startswith(_CLOSED_SECTION) and line.startswith(f"- {NOTE_NAME} — "):
            return "closed"
    return "absent"


def _after_call(state: str, call: ToolCall, result: ToolResult) -> str:
    """The state of ``notes`` after ``call`` on it came back with ``result``."""
    if not result.is_error:
        return {"open_memory": "open", "close_memory": "closed", "delete_memory": "absent"}.get(call.name, state)
    if result.content.startswith(f"Error: there is no memory named '{NOTE_NAME}'"):
        return "absent"
    if call.name == "close_memory" and result.content.startswith(f"Error: memory '{NOTE_NAME}' is closed"):
        return "closed"
    return state


def notes_state(messages: Sequence[ChatMessage]) -> str:
    """What ``messages`` show of the memory ``notes``: ``"open"``, ``"closed"`` or
    ``"absent"`` (the module docstring's rule: the context block, then each call on it
    and its result, in order)."""
    state = "absent"
    pending: dict[str, ToolCall] = {}
    last_call: ToolCall | None = None
    for message in messages:
        if message.role == "system" and message.content.startswith(_BLOCK_OPENING):
            state = _block_state(message.content)
        for call in message.tool_calls:
            pending[call.call_id] = last_call = call
        result = message.tool_result
        if result is not None:
            made = pending.pop(result.call_id, None) or last_call
            if made is not None and made.name == result.name and made.arguments.get("name") == NOTE_NAME:
                state = _after_call(state, made, result)
    return state


def _before_turn(messages: Sequence[ChatMessage]) -> Sequence[ChatMessage]:
    """The messages before the user's last one."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            return messages[:i]
    return messages


def _opened_content(result: ToolResult) -> str:
    return _ALREADY_OPEN.sub("", result.content, count=1)


def _call(tool: str, /, **arguments: str) -> ToolCall:
    return ToolCall(name=tool, arguments=dict(arguments), call_id=f"offline-{tool}")


def _remember(fact: str, results: list[ToolResult], *, known: str) -> ToolCall | None:
    line = f"- {in_second_person(fact.strip().rstrip('.'))}"
    if not results:
        if known == "absent":
            return _call("close_memory", name=NOTE_NAME, description=NOTE_DESCRIPTION, content=line)
        return _call("open_memory", name=NOTE_NAME)
    last = results[-1]
    if last.name == "close_memory" and last.is_error and len(results) == 1:
        # The input hid an existing note (refused as closed): open it, then write it.
        return _call("open_memory", name=NOTE_NAME)
    if last.name != "open_memory":
        return None
    if not last.is_error:
        content = _opened_content(last)
        if line in content.splitlines():
            return _call("close_memory", name=NOTE_NAME)
        return _call("close_memory", name=NOTE_NAME, content=f"{content}\n{line}")
    if last.content.startswith(f"Error: there is no memory named '{NOTE_NAME}'"):
        return _call("close_memory", name=NOTE_NAME, description=NOTE_DESCRIPTION, content=line)
    return None


def next_call(messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> ToolCall | None:
    """The memory tool call the offline model makes next in this turn, or None (then it
    answers in text). Only when ``open_memory`` and ``close_memory`` are offered."""
    offered = {t.name for t in tools}
    if not {"open_memory", "close_memory"} <= offered:
        return None
    said, results = _turn(messages)
    fact = to_remember(said)
    if fact is not None:
        if not fact:
            return None  # nothing to remember: answer() asks what
        return _remember(fact, results, known=notes_state(_before_turn(messages)))
    if _RECALL.search(said):
        if not results:
            if notes_state(_before_turn(messages)) == "absent":
                return None  # nothing to open: answer() says so
            return _call("open_memory", name=NOTE_NAME)
        if results[-1].name == "open_memory" and not results[-1].is_error:
            return _call("close_memory", name=NOTE_NAME)
    return None


def answer(messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> str | None:
    """The offline model's text once a cued turn's calls are done (or, asked what it
    knows with no memory to open, that it has nothing; asked to remember nothing,
    ASK_WHAT), or None when the turn had no cue or no memory tool results."""
    said, results = _turn(messages)
    recall = _RECALL.search(said)
    fact = to_remember(said)
    if not results:
        if not {"open_memory", "close_memory"} <= {t.name for t in tools}:
            return None
        if fact == "":
            return ASK_WHAT
        if fact is None and recall and notes_state(_before_turn(messages)) == "absent":
            return f"[offline model] I have nothing in memory about {_told(recall['topic'])}."
        return None
    if fact is None and recall:
        opened = next((r for r in results if r.name == "open_memory"), None)
        if opened is None or opened.is_error:
            return f"[offline model] I have nothing in memory about {_told(recall['topic'])}."
        lines = about(recall["topic"], _opened_content(opened).splitlines())
        if not lines:
            return f"[offline model] My memory '{NOTE_NAME}' says nothing about {_told(recall['topic'])}."
        return "[offline model] From memory: " + " ".join(ln.lstrip("- ") for ln in lines)
    last = results[-1]
    if fact and last.name == "close_memory" and not last.is_error:
        return f"[offline model] Saved to memory '{NOTE_NAME}'."
    outcome = "refused" if last.is_error else "answered"
    return f"[offline model] {last.name} {outcome}: {last.content[:200]}"
