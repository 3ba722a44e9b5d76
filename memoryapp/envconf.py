"""Strict readers for settings that come from the environment.

Each helper either returns a well-formed value or raises ``ImproperlyConfigured`` naming
the variable, so a typo in deployment fails at start-up instead of at the first request.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str = "") -> str:
    """Return the variable ``name`` (or ``NAME_FILE``'s contents, for secrets), else ``default``."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    """Return ``True``/``False`` for the literal strings ``true``/``false`` (any case).

    Raises ImproperlyConfigured for any other value, so ``DEBUG=flase`` is not silently false.
    """
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


def env_int(name: str, default: int) -> int:
    """Return the variable as an int; ImproperlyConfigured if it is not one."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc


def env_float(name: str, default: float) -> float:
    """Return the variable as a float; ImproperlyConfigured if it is not one."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    """Return a comma-separated variable as a list of non-empty, stripped strings."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]
