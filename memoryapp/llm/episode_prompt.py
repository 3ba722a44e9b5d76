"""The episode extraction prompt, its JSON schema and the parser of the answer.

Provider-neutral (memoryapp.llm.gemini sends it with ``response_json_schema``); the same
data rules as every prompt (memoryapp.llm.prompts): instructions in the system text,
message text as escaped, delimited data in the user turn, each message with its sequence
number and time so facts can cite their sources and resolve relative dates.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memoryapp.llm import prompts
from memoryapp.llm.port import (
    EpisodeExtraction,
    ExtractedEntity,
    ExtractedFact,
    ModelError,
    TranscriptMessage,
    Usage,
)

#: The JSON the episode prompt asks for (Gemini ``response_json_schema``).
EPISODE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "summary": {"type": "string"},
        "quotedSequences": {"type": "array", "items": {"type": "integer"}},
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "subject": {"type": "string"},
                    "attribute": {"type": "string"},
                    "value": {"type": "string"},
                    "singleValued": {"type": "boolean"},
                    "entities": {"type": "array", "items": {"type": "string"}},
                    "sourceSequences": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["text", "subject", "sourceSequences"],
            },
        },
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "kind": {"type": "string"},
                    "summary": {"type": "string"},
                },
                "required": ["name"],
            },
        },
    },
    "required": ["title", "summary", "facts", "entities"],
}


def episode_transcript(messages: list[TranscriptMessage]) -> str:
    """``<transcript>`` with one escaped ``<message seq role time>`` element per message."""
    lines = ["<transcript>"]
    for m in messages:
        when = f' time="{m.created_at.strftime("%Y-%m-%d %H:%M")} UTC"' if m.created_at else ""
        lines.append(
            f'<message seq="{m.sequence_number}" role="{prompts._attr(m.role)}"{when}>'
            f"{prompts._text(m.content)}</message>"
        )
    lines.append("</transcript>")
    return "\n".join(lines)


def episode_prompt(*, messages: list[TranscriptMessage]) -> prompts.Prompt:
    """Ask for the episode's title, summary, facts and entities as EPISODE_SCHEMA JSON
    (spec 000 "Relationship to the other layers"; issue 8 items 2-3)."""
    system = "\n".join(
        [
            "You turn a finished part of a conversation into long-term memory.",
            "",
            f"The request contains a <transcript> of <message> elements. {prompts._DATA_RULES}",
            "A message may open with a speaker label such as 'Mara: '; then that person is "
            "speaking. Otherwise a user message speaks for the user.",
            "",
            "Return JSON with:",
            '- "title": a few words naming what the part is about.',
            '- "summary": a short plain-text summary of what was said, with names, numbers '
            'and absolute dates; "quotedSequences": the seq of the messages it draws on.',
            '- "facts": durable facts the people stated about themselves and the people and '
            "things in their lives, each one self-contained third-person sentence (\"The user "
            'drives a Honda Civic.") with absolute dates resolved from the message time; '
            '"subject": who or what it is about ("user" for the user, else the name); '
            '"attribute" and "value": the fact split for comparison (attribute "car", value '
            '"Honda Civic"; attribute "sister", value "Mara"), empty when it does not split; '
            '"singleValued": true when the attribute holds one value at a time (the car one '
            'drives, the city one lives in), false for things one can have several of; '
            '"entities": names the fact mentions; "sourceSequences": the seq of the messages '
            "that state it. Leave out questions, small talk, guesses and what only an "
            "assistant suggested.",
            '- "entities": the people, places, organisations, products and other things the '
            'facts mention; "kind" is one of person, place, organisation, product, event, '
            'animal, thing; "summary" is one short sentence about it.',
            "Never invent anything that is not in the transcript. Empty arrays are fine.",
        ]
    )
    user = episode_transcript(messages) + "\n\nReturn the episode as JSON."
    return prompts.Prompt(system=system, user=user)


def _text(value: Any, limit: int) -> str:
    return value.strip()[:limit] if isinstance(value, str) else ""


def _ints(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, int) and not isinstance(v, bool))


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(dict.fromkeys(s.strip()[:200] for s in value if isinstance(s, str) and s.strip()))


def _fact(item: Any) -> ExtractedFact | None:
    if not isinstance(item, dict):
        return None
    text = _text(item.get("text"), 2000)
    if not text:
        return None
    attribute = _text(item.get("attribute"), 100)
    return ExtractedFact(
        text=text,
        subject=_text(item.get("subject"), 200) or None,
        attribute=attribute,
        value=_text(item.get("value"), 500) if attribute else "",
        single_valued=item.get("singleValued") is True,
        entities=_strings(item.get("entities")),
        source_sequences=_ints(item.get("sourceSequences")),
    )


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)


def parse_episode(text: str, *, model: str, usage: Usage) -> EpisodeExtraction:
    """The episode in the model's JSON answer. Raises ModelError (``bad_response``) when
    the answer is not JSON, not an object, or lacks a string ``title``/``summary`` or an
    array ``facts``/``entities``; single malformed items inside the arrays are skipped."""
    fenced = _FENCE.match(text)
    try:
        data = json.loads(fenced.group(1) if fenced else text)
    except ValueError as exc:
        raise ModelError("extract_episode: the answer was not JSON", kind="bad_response") from exc
    if not isinstance(data, dict):
        raise ModelError("extract_episode: the answer was not a JSON object", kind="bad_response")
    for name, kind in (("title", str), ("summary", str), ("facts", list), ("entities", list)):
        if not isinstance(data.get(name), kind):
            raise ModelError(
                f"extract_episode: the answer has no valid {name!r}", kind="bad_response"
            )
    facts = [f for f in (_fact(item) for item in data["facts"]) if f is not None]
    entities: dict[str, ExtractedEntity] = {}
    for item in data["entities"]:
        name = _text(item.get("name"), 200) if isinstance(item, dict) else ""
        if name and name.casefold() not in entities:
            entities[name.casefold()] = ExtractedEntity(
                name=name,
                kind=_text(item.get("kind"), 50).lower() or "thing",
                summary=_text(item.get("summary"), 1000),
            )
    return EpisodeExtraction(
        title=_text(data["title"], 200),
        summary=_text(data["summary"], 20_000),
        quoted_sequences=_ints(data.get("quotedSequences")),
        facts=facts,
        entities=list(entities.values()),
        model=model,
        usage=usage,
    )
