"""Chat turn latency with 1 and with 3 open browser tabs on the thread, and frames per turn
(issue 10 item 5).

A uvicorn server (as ./dev serve runs it) on a throwaway SQLite database with the offline
model. For each case, N headless chromium pages (Debian's /usr/bin/chromium, Playwright)
log in and open the thread page, so live.js runs in each as it would for a person; one
more WebSocket client counts the frames the server sends per turn. Turns are POSTed to
the playground chat route with the session of a logged-in page; each turn's latency is
the POST's round trip. A pause of PAUSE_S between turns lets the tabs' one refresh after
``chat.done`` land, as a person reading the reply would.

    .venv/bin/python bench/bench_tabs.py [--turns 10] [--json]

Prints the median and p90 latency per case, the ratio 3 tabs / 1 tab (the goal is at
most 1.2), and the frames per turn one tab receives.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import percentile, throwaway_database
from bench_working import start_server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
PASSWORD = "bench-tabs-password"
PAUSE_S = 1.0
WARMUP = 2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_world(cases: list[int]) -> tuple[Any, dict[int, Any]]:
    """A user (owner of a project) and one thread per case, each with a short history."""
    from django.contrib.auth.models import User

    from memoryapp import working
    from memoryapp.models import Membership, Project

    project = Project.objects.create(slug="tabs", name="Tabs")
    user = User.objects.create_user("bench", password=PASSWORD)
    Membership.objects.create(user=user, project=project, role=Membership.Role.OWNER)
    threads = {}
    for tabs in cases:
        thread = working.thread_create(project=project, dataset=f"tabs-{tabs}")
        for n in range(6):
            working.message_append(
                thread=thread, role="user" if n % 2 == 0 else "assistant", content=f"history line {n}"
            )
        threads[tabs] = thread
    return project, threads


class FrameCounter:
    """A WebSocket client on the thread's group, counting frames by event name."""

    def __init__(self, url: str, cookie: str, origin: str) -> None:
        self.url, self.cookie, self.origin = url, cookie, origin
        self.counts: dict[str, int] = {}
        self.ready = threading.Event()
        self.stop = False
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self.thread.start()
        self.ready.wait(10)

    async def _run(self) -> None:
        import websockets

        async with websockets.connect(
            self.url, additional_headers={"Cookie": self.cookie}, origin=self.origin  # type: ignore[arg-type]
        ) as ws:
            self.ready.set()
            while not self.stop:
                try:
                    raw = await asyncio.wait_for(ws.recv(), 0.2)
                except TimeoutError:
                    continue
                event = json.loads(raw).get("event", "?")
                self.counts[event] = self.counts.get(event, 0) + 1

    def take(self) -> dict[str, int]:
        counts, self.counts = self.counts, {}
        return counts


def run_case(browser: Any, base: str, project: Any, thread: Any, tabs: int, turns: int) -> dict[str, Any]:
    import httpx

    pages = []
    context = browser.new_context()
    for _ in range(tabs):
        page = context.new_page()
        pages.append(page)
    login = pages[0]
    login.goto(f"{base}/login/")
    login.get_by_label("Username").fill("bench")
    login.get_by_label("Password").fill(PASSWORD)
    login.get_by_test_id("login-submit").click()
    login.wait_for_url("**/dashboard/threads/**")
    url = f"{base}/dashboard/threads/{thread.pk}/?projectId={project.pk}"
    for page in pages:
        page.goto(url)
        try:
            page.wait_for_selector("[data-testid=live-status][data-state=open]", timeout=15_000)
        except Exception as exc:
            state = page.evaluate("(document.getElementById('live-status') || {}).textContent")
            raise SystemExit(f"the thread page's live socket did not open ({state!r}) at {page.url}") from exc
    cookies = {c["name"]: c["value"] for c in context.cookies()}
    cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
    ws_path = pages[0].evaluate("document.getElementById('live-root').dataset.wsPath")
    counter = FrameCounter(base.replace("http", "ws") + ws_path, cookie, base)
    chat = f"{base}/dashboard/chat/threads/{thread.pk}/chat?projectId={project.pk}"
    headers = {"X-CSRFToken": cookies["csrftoken"], "Cookie": cookie, "Origin": base, "Referer": url}
    latencies: list[float] = []
    frames: list[dict[str, int]] = []
    with httpx.Client(timeout=30) as client:
        for n in range(WARMUP + turns):
            counter.take()
            start = time.perf_counter()
            resp = client.post(chat, json={"content": f"turn {n}: tell me about the history"}, headers=headers)
            elapsed = time.perf_counter() - start
            if resp.status_code != 201:
                raise SystemExit(f"chat answered {resp.status_code}: {resp.text[:300]}")
            time.sleep(PAUSE_S)
            if n >= WARMUP:
                latencies.append(elapsed * 1000)
                frames.append(counter.take())
    counter.stop = True
    context.close()
    per_turn: dict[str, float] = {}
    for sample in frames:
        for event, count in sample.items():
            per_turn[event] = per_turn.get(event, 0) + count / len(frames)
    return {
        "tabs": tabs,
        "p50_ms": statistics.median(latencies),
        "p90_ms": percentile(latencies, 0.9),
        "frames_per_turn": round(sum(per_turn.values()), 2),
        "frames_by_event": {k: round(v, 2) for k, v in sorted(per_turn.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=10, help="measured turns per case (after 2 warm-up)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    cases = [1, 3]
    with throwaway_database("sqlite") as label:
        from playwright.sync_api import sync_playwright

        project, threads = make_world(cases)
        port = free_port()
        log = Path(tempfile.mkdtemp(prefix="bench-tabs-")) / "server.log"
        server = start_server("uvicorn", port, log, debug=True)
        base = f"http://127.0.0.1:{port}"
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                results = [run_case(browser, base, project, threads[t], t, args.turns) for t in cases]
                browser.close()
        finally:
            server.terminate()
            server.wait(10)
    ratio = results[1]["p50_ms"] / results[0]["p50_ms"]
    if args.json:
        print(json.dumps({"database": label, "cases": results, "ratio_3_to_1": ratio}, indent=2))
        return
    print(f"bench_tabs on {label}, offline model, {args.turns} turns per case")
    for r in results:
        print(
            f"  {r['tabs']} tab(s): p50 {r['p50_ms']:.0f} ms, p90 {r['p90_ms']:.0f} ms, "
            f"{r['frames_per_turn']} frames/turn to one tab {r['frames_by_event']}"
        )
    print(f"  ratio 3 tabs / 1 tab (p50): {ratio:.2f} (goal <= 1.2)")


if __name__ == "__main__":
    main()
