"""Client-written text that is one unbroken run of hundreds of characters (a 200-character
dataset or model name, a long tool-call argument, a note, an agent's system prompt) and
a many-column table on a phone never widen a dashboard page past the window: the page
scrolls vertically only, at 1280 and at 390 pixels wide."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from typing import Any

import pytest

from memoryapp.models import ApiKey
from tests.e2e.test_browser import Owner, log_in, scroll_width

pytestmark = pytest.mark.usefixtures("transactional_db")


def _api(live_url: str, key: str, method: str, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{live_url}/v1/memory{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method=method,
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        assert response.status in (200, 201, 202)
        return json.loads(response.read())


def _long_text_thread(live_url: str, key: str) -> str:
    """An agent thread whose every client-written field is one long unbroken word,
    compacted once; returns its id."""
    _api(live_url, key, "PUT", "/agents/dm", {"systemPrompt": "P" * 3000, "memory": {}})
    thread = _api(
        live_url,
        key,
        "POST",
        "/working/threads",
        {"dataset": "D" * 200, "tags": ["T" * 100], "agent": "dm"},
    )["threadId"]
    for content in ["My name is " + "Zed" * 100, "https://example.com/" + "a" * 600]:
        _api(
            live_url,
            key,
            "POST",
            f"/working/threads/{thread}/messages",
            {"role": "user", "content": content, "model": "m" * 200},
        )
    tools = f"/working/threads/{thread}/tools"
    note = {"name": "n" * 64, "description": "d" * 300, "content": "c" * 3000}
    _api(live_url, key, "POST", tools, {"name": "close_memory", "arguments": note})
    _api(live_url, key, "POST", tools, {"name": "open_memory", "arguments": {"name": "x" * 1000}})
    _api(live_url, key, "POST", f"/working/threads/{thread}/compact", {})
    return str(thread)


@pytest.mark.parametrize("width", [1280, 390])
def test_long_unbroken_text_never_widens_a_page(
    owner: Owner, live_url: str, new_page: Any, width: int
) -> None:
    _, key = ApiKey.issue(project=owner.project, name="e2e")
    thread = _long_text_thread(live_url, key)
    project = f"?projectId={owner.project.pk}"
    dataset = urllib.parse.quote("D" * 200)
    paths = [
        f"/dashboard/threads/{thread}/{project}",
        f"/dashboard/threads/{thread}/agent/{project}",
        f"/dashboard/threads/{thread}/memories/{project}",
        f"/dashboard/threads/{thread}/playground/{project}",
        f"/dashboard/threads/{thread}/compactions/{project}",
        f"/dashboard/threads/{thread}/turns/{project}",
        f"/dashboard/agents/{project}",
        f"/dashboard/memory/dataset/{project}&dataset={dataset}",
    ]
    page = new_page(width=width)
    log_in(page, live_url)
    widths = {}
    for path in paths:
        page.goto(f"{live_url}{path}")
        page.wait_for_load_state("networkidle")
        widths[path.split("?")[0]] = scroll_width(page)
    assert widths == {path.split("?")[0]: width for path in paths}
