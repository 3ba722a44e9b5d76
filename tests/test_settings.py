"""memoryapp.settings: what the environment switches, checked on a real server."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.conftest import BASE
from tests.servers import manage, uvicorn_server

PARALLEL = 20

def test_it_gives_a_sqlite_database_url_the_default_sqlite_options(tmp_path: Path) -> None:
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    manage(env, "migrate", "--noinput", "-v0")
    key = manage(env, "create_api_key", "--project", "acme", "--create").strip().splitlines()[-1]
    headers = {"Authorization": f"Bearer {key}"}
    with uvicorn_server(env) as server, httpx.Client(base_url=server.url, headers=headers) as client:
        thread = client.post(f"{BASE}/threads", json={"dataset": "d"}).json()["threadId"]

        def append(i: int) -> httpx.Response:
            with httpx.Client(base_url=server.url, headers=headers, timeout=60) as own:
                return own.post(
                    f"{BASE}/threads/{thread}/messages", json={"role": "user", "content": f"m{i}"}
                )

        with ThreadPoolExecutor(PARALLEL) as pool:
            responses = list(pool.map(append, range(PARALLEL)))

    assert [r.status_code for r in responses] == [201] * PARALLEL, [r.text for r in responses]
    numbers = sorted(r.json()["sequenceNumber"] for r in responses)
    assert numbers == list(range(1, PARALLEL + 1))
