"""Strict readers for settings that come from the environment.

Each helper either returns a well-formed value or raises ``ImproperlyConfigured`` naming
the variable, so a typo in deployment fails at start-up instead of at the first request.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

T = TypeVar("T")


def env_str(name: str, default: str = "") -> str:
    """Return the variable ``name`` (or ``NAME_FILE``'s contents, for secrets), else ``default``."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    """Return ``True``/``False`` for the literal strings ``true``/``false`` (any case).

    Raises ImproperlyConfigured for any other value (``1``, ``yes``, ``flase``), so a
    typo in deployment is not silently read as one or the other.
    """
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() not in ("true", "false"):
        raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")
    return raw.lower() == "true"


def _env_number(name: str, default: T, parse: Callable[[str], T], kind: str) -> T:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return parse(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be {kind}, got {raw!r}") from exc


def env_int(name: str, default: int) -> int:
    """Return the variable as an int; ImproperlyConfigured if it is not one."""
    return _env_number(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    """Return the variable as a float; ImproperlyConfigured if it is not one."""
    return _env_number(name, default, float, "a number")


def env_list(name: str, default: list[str]) -> list[str]:
    """Return a comma-separated variable as a list of non-empty, stripped strings."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]
