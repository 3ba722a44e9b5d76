"""The episode extraction prompt, its JSON schema and the parser of the answer.

Provider-neutral (memoryapp.llm.gemini sends it with ``response_json_schema``); the same
data rules as every prompt (memoryapp.llm.prompts): instructions in the system text,
message text as escaped, delimited data in the user turn, each message with its sequence
number and time so facts can cite their sources and resolve relative dates.
"""

from __future__ import annotations

from typing import Any

from memoryapp.llm import answers, prompts
from memoryapp.llm.port import (
    EpisodeExtraction,
    ExtractedFact,
    ModelError,
    TranscriptMessage,
    Usage,
)

#: The JSON the episode prompt asks for (Gemini ``response_json_schema``).
EPISODE_SCHEMA = prompts.object_schema(
    {
        "title": prompts.STRING,
        "summary": prompts.STRING,
        "quotedSequences": prompts.array_schema(prompts.INTEGER),
        "facts": prompts.array_schema(
            prompts.object_schema(
                {
                    **prompts.FACT_PROPERTIES,
                    "attribute": prompts.STRING,
                    "value": prompts.STRING,
                    "singleValued": {"type": "boolean"},
                    "retires": prompts.array_schema(prompts.STRING),
                    "retiresWhen": prompts.STRING,
                    "event": {"type": "boolean"},
                    "entities": prompts.array_schema(prompts.STRING),
                    "sourceSequences": prompts.array_schema(prompts.INTEGER),
                },
                ["text", "subject", "sourceSequences"],
            )
        ),
        "entities": prompts.ENTITIES_SCHEMA,
    },
    ["title", "summary", "facts", "entities"],
)


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
            '"retires": the subject\'s other single-valued attributes a change of state ends '
            '(quitting or losing a job: attribute "job", retires ["works at"]; becoming '
            'vegetarian: attribute "diet", retires ["stance on meat"]), else empty; '
            '"retiresWhen": a value that one of those attributes must have for them to end '
            '("I left Acme": retires ["works at", "job"], retiresWhen "Acme"), else empty; '
            '"event": true when the fact tells that something happened and stays true once '
            'said ("The user quit the hospital job.", "The user sold the car."): it ends the '
            "old value, but a later value (a new job, a new car) does not make it untrue; "
            "false for a state that a later value replaces (\"The user is a nurse.\"); "
            '"entities": names the fact mentions; "sourceSequences": the seq of the messages '
            "that state it. Leave out questions, small talk, guesses and what only an "
            "assistant suggested.",
            '- "entities": the people, places, organisations, products and other things the '
            'facts mention; "kind" is one of person, place, organisation, product, event, '
            'animal, thing; "summary" is one short sentence about it.',
            "Never invent anything that is not in the transcript. Empty arrays are fine.",
        ]
    )
    user = prompts.transcript_block(messages, with_time=True) + "\n\nReturn the episode as JSON."
    return prompts.Prompt(system=system, user=user)


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
    text = answers.clean(item.get("text"), 2000)
    if not text:
        return None
    attribute = answers.clean(item.get("attribute"), 100)
    return ExtractedFact(
        text=text,
        subject=answers.clean(item.get("subject"), 200) or None,
        attribute=attribute,
        value=answers.clean(item.get("value"), 500) if attribute else "",
        single_valued=item.get("singleValued") is True,
        entities=_strings(item.get("entities")),
        source_sequences=_ints(item.get("sourceSequences")),
        retires=_strings(item.get("retires")),
        retires_when=answers.clean(item.get("retiresWhen"), 500),
        event=item.get("event") is True,
    )


def parse_episode(text: str, *, model: str, usage: Usage) -> EpisodeExtraction:
    """The episode in the model's JSON answer. Raises ModelError (``bad_response``) when
    the answer is not JSON, not an object, or lacks a string ``title``/``summary`` or an
    array ``facts``/``entities``; single malformed items inside the arrays are skipped."""
    data = answers.json_object(text, what="extract_episode")
    for name, kind in (("title", str), ("summary", str), ("facts", list), ("entities", list)):
        if not isinstance(data.get(name), kind):
            raise ModelError(
                f"extract_episode: the answer has no valid {name!r}", kind="bad_response"
            )
    facts = [f for f in (_fact(item) for item in data["facts"]) if f is not None]
    return EpisodeExtraction(
        title=answers.clean(data["title"], 200),
        summary=answers.clean(data["summary"], 20_000),
        quoted_sequences=_ints(data.get("quotedSequences")),
        facts=facts,
        entities=answers.entities(data["entities"]),
        model=model,
        usage=usage,
    )
