"""WSGI entry point (the API works under WSGI too; live updates need ASGI)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")
_django = get_wsgi_application()

from memoryapp.validation import RAW_PATH_INFO  # noqa: E402


def application(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    """Django's WSGI application, the path as the server gave it kept first
    (memoryapp.validation.RAW_PATH_INFO: Django replaces PATH_INFO with its decoded text)."""
    environ[RAW_PATH_INFO] = environ.get("PATH_INFO", "")
    return _django(environ, start_response)
