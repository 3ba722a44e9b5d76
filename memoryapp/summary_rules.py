"""What a compaction may write as its summary (docs/decisions.md, "Short folds").

Two rules shared by memoryapp.compaction and memoryapp.agent_compaction:

- **A short fold is kept word for word.** When the text a run folds (the previous
  summary, then each message as a ``- <role>: <content>`` line) is at most
  settings.MEMORY_SUMMARY_VERBATIM_TOKENS tokens (memoryapp.tokens; default 64), no
  summary could be both shorter and useful ("hi", "ok" would become "" or "-"), so that
  text *is* the summary and no model is called (``verbatim``).
- **A model's summary must say something.** One that is empty, or only bullets, role
  labels and punctuation (``"-"``, ``"- user:"``), is a failed model call
  (``ModelError``, kind ``bad_response``): the existing failure path, so nothing is folded
  into a summary that lost it (``checked``).
"""

from __future__ import annotations

import re

from django.conf import settings

from memoryapp.llm.port import ModelError, Summary, TranscriptMessage, Usage
from memoryapp.tokens import count_tokens

#: Opens a word-for-word summary written without a previous one.
VERBATIM_HEADER = "Earlier in this conversation (kept word for word):"

_LABEL = re.compile(r"(?:^|(?<=\s))(?:user|assistant|system|tool):", re.IGNORECASE)
_FILLER = re.compile(r"[\s\-*•·.,:;]+")


def verbatim(
    *, previous_summary: str | None, messages: list[TranscriptMessage], max_tokens: int
) -> Summary | None:
    """The fold as its own summary (model ``""``, no usage: no model call) when its text
    fits in settings.MEMORY_SUMMARY_VERBATIM_TOKENS and ``max_tokens``; else None
    (summarise it)."""
    lines = [previous_summary.strip() if previous_summary else VERBATIM_HEADER]
    lines += [f"- {m.role}: {m.content}" for m in messages]
    text = "\n".join(lines)
    if count_tokens(text) > min(int(settings.MEMORY_SUMMARY_VERBATIM_TOKENS), max_tokens):
        return None
    return Summary(text=text, model="", usage=Usage())


def is_verbatim(summary: Summary) -> bool:
    """Whether ``summary`` came from ``verbatim`` (no model call), not from a model."""
    return summary.model == ""


def says_something(text: str) -> bool:
    """Whether ``text`` has anything left once bullets, role labels, whitespace and
    punctuation are taken out."""
    return bool(_FILLER.sub("", _LABEL.sub("", text)))


def checked(summary: Summary) -> Summary:
    """``summary``, or ModelError (``bad_response``) when its text says nothing."""
    if not says_something(summary.text):
        raise ModelError(
            f"the summary says nothing ({summary.text.strip()[:40]!r})", kind="bad_response"
        )
    return summary
