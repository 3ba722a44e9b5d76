"""Reading a model's JSON answer defensively: one place for what every parser of an
extraction answer does (memoryapp.llm.gemini.parse_extraction,
memoryapp.llm.episode_prompt.parse_episode).

The answer is untrusted text: it may come wrapped in a code fence, items may be
malformed, strings may be of any length. Malformed items are skipped and strings are
trimmed and capped; only an answer that is not a JSON object at all is an error.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memoryapp.llm.port import ExtractedEntity, ModelError

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)


def json_object(text: str, *, what: str) -> dict[str, Any]:
    """The JSON object in ``text`` (a ```json code fence around it is stripped).

    Raises ModelError (``bad_response``) "<what>: the answer was not JSON" or "... not a
    JSON object"."""
    fenced = _FENCE.match(text)
    try:
        data = json.loads(fenced.group(1) if fenced else text)
    except ValueError as exc:
        raise ModelError(f"{what}: the answer was not JSON", kind="bad_response") from exc
    if not isinstance(data, dict):
        raise ModelError(f"{what}: the answer was not a JSON object", kind="bad_response")
    return data


def clean(value: Any, limit: int) -> str:
    """``value`` stripped and cut to ``limit`` characters; "" when it is not a string."""
    return value.strip()[:limit] if isinstance(value, str) else ""


def entities(items: Any) -> list[ExtractedEntity]:
    """The entities of an answer's ``entities`` array (the schema's name, kind, summary),
    in order, de-duplicated by name case-insensitively (the first wins); items that are
    not objects or have no name are skipped, a non-list is no entities. ``kind`` is
    lower-cased, "thing" when missing."""
    found: dict[str, ExtractedEntity] = {}
    for item in items if isinstance(items, list) else []:
        name = clean(item.get("name"), 200) if isinstance(item, dict) else ""
        if name and name.casefold() not in found:
            found[name.casefold()] = ExtractedEntity(
                name=name,
                kind=clean(item.get("kind"), 50).lower() or "thing",
                summary=clean(item.get("summary"), 1000),
            )
    return list(found.values())
