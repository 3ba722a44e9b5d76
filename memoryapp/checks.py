"""Checks run when the server starts (memoryapp.asgi), so it fails then, not per request.

They are not registered with ``checks.register``: ``migrate`` and ``collectstatic`` must
run before the server, and ``check --deploy`` is run before collectstatic too.
"""

from __future__ import annotations

from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.core import checks
from django.core.exceptions import ImproperlyConfigured


def static_manifest_check() -> list[checks.CheckMessage]:
    """memoryapp.E001 when static files are served from a manifest that does not exist.

    With DEBUG=false the static storage names files by content hash from the manifest
    ``collectstatic`` writes; without it every page (and every HTML 404) would fail with
    "Missing staticfiles manifest entry", so the server refuses to start instead.
    """
    if not isinstance(staticfiles_storage, ManifestFilesMixin):
        return []
    if staticfiles_storage.exists(staticfiles_storage.manifest_name):
        return []
    return [
        checks.Error(
            f"Static files have not been collected: no {staticfiles_storage.manifest_name} "
            f"in STATIC_ROOT ({staticfiles_storage.location}).",
            hint="Run `python manage.py collectstatic --noinput` before starting the server "
            "with DEBUG=false (`./dev prod` does).",
            id="memoryapp.E001",
        )
    ]


SERVING_CHECKS = [static_manifest_check]


def serving_checks_pass() -> None:
    """Run SERVING_CHECKS; raise ImproperlyConfigured listing any error.

    Called by memoryapp.asgi at import, so a misconfigured server fails at start-up with
    the message instead of answering 500 to every request.
    """
    errors = [m for check in SERVING_CHECKS for m in check() if m.is_serious()]
    if errors:
        raise ImproperlyConfigured("\n".join(str(e) for e in errors))
