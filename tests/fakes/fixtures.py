"""The ``fake_gemini`` fixture: a fake Gemini API on loopback, wired into the settings.

Register it in a test module by importing the fixture function (its pytest name is
``fake_gemini``; the Python name differs so the import is not shadowed by the argument)::

    from tests.fakes.fixtures import fake_gemini_fixture  # noqa: F401

    def test_it_calls_gemini(fake_gemini: FakeGeminiServer) -> None: ...

The fixture selects the gemini adapter (``MEMORY_LLM_ADAPTER="gemini"``), sets
``GEMINI_API_KEY="test-key"``, ``GEMINI_BASE_URL`` to the fake, a 5-second timeout, three
attempts and a 10 ms initial retry delay, and stops the server after the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.gemini_server import FakeGeminiServer

TEST_API_KEY = "test-key"


@pytest.fixture(name="fake_gemini")
def fake_gemini_fixture(settings: Any) -> Iterator[FakeGeminiServer]:
    """A started FakeGeminiServer that memoryapp.llm.get_model() talks to."""
    server = FakeGeminiServer().start()
    settings.MEMORY_LLM_ADAPTER = "gemini"
    settings.GEMINI_API_KEY = TEST_API_KEY
    settings.GEMINI_BASE_URL = server.url
    settings.GEMINI_TIMEOUT_SECONDS = 5.0
    settings.GEMINI_RETRY_ATTEMPTS = 3
    settings.GEMINI_RETRY_INITIAL_DELAY_SECONDS = 0.01
    try:
        yield server
    finally:
        server.stop()
