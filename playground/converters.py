"""Path converters of the dashboard's URLs."""

from __future__ import annotations

import uuid

from memoryapp.validation import UUID_PATTERN, canonical_uuid


class PathIdConverter:
    """``<path_id:name>``: an object's id in a dashboard URL, by the API's rule for ids in
    a path (memoryapp.validation.path_id): the canonical 8-4-4-4-12 form in either case.
    Django's ``<uuid:...>`` takes lower case only, so a thread id copied in capitals was a
    404 here while /v1 found the thread. Reversed URLs are lower case, and
    playground.middleware.CanonicalIdsMiddleware sends a GET in capitals there."""

    regex = UUID_PATTERN.removeprefix("^").removesuffix("$")

    def to_python(self, value: str) -> uuid.UUID:
        return canonical_uuid(value)

    def to_url(self, value: uuid.UUID | str) -> str:
        return str(canonical_uuid(value))
