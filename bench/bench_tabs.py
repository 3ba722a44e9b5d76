"""Chat turn latency with 1 and with 3 open browser tabs on the thread, and what each tab
is sent per turn (issue 10 item 5).

A uvicorn server (as ./dev serve runs it) on a throwaway SQLite database with the offline
model. Two threads, one per case: one headless chromium page (Debian's /usr/bin/chromium,
Playwright) on the first thread's page, three on the second's, all open for the whole run,
so live.js runs in each as it would for a person. One more WebSocket client per thread,
opened on the path the pages use, counts the frames and bytes a tab is sent per turn.

Turns are POSTed to the playground chat route with the session of a logged-in page, the
two cases interleaved (round r sends one turn on each thread, the order alternating each
round), so machine noise hits both alike; both get the same warm-up and the same number
of turns. Per turn:

- **turn**: the POST's round trip (the server's turn, as the sending page waits for it);
- **shown**: from the POST's start until every open tab of the thread shows the stored
  reply (a MutationObserver in each page stamps when the reply's row appears);
- **frames / bytes** one tab is sent over its WebSocket, by event (payload before
  compression); **refetches**: HTTP requests a tab makes (htmx refreshes) and the bytes of
  their bodies, per tab; **server CPU**: the server process's CPU time from the
  POST's start to the end of the pause after it (the tabs' follow-up work included).

A pause of PAUSE_S between turns, after every tab shows the reply, lets the tabs' follow-up
work land, as a person reading the reply would.

    .venv/bin/python bench/bench_tabs.py [--turns 20] [--port 8161] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import percentile, throwaway_database
from bench_working import start_server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-sync",
]
PASSWORD = "bench-tabs-password"
PAUSE_S = 1.0
WARMUP = 3
CASES = (1, 3)
# Stamps when each message row first appears (data-seq -> Date.now()), and keeps every
# resource timing entry so the page's requests can be counted.
PAGE_PROBE = """
window.__seen = {};
performance.setResourceTimingBufferSize(100000);
document.addEventListener("DOMContentLoaded", function () {
  function stamp() {
    document.querySelectorAll("li[data-testid=message][data-seq]").forEach(function (el) {
      if (!(el.dataset.seq in window.__seen)) window.__seen[el.dataset.seq] = Date.now();
    });
  }
  stamp();
  new MutationObserver(stamp).observe(document.body, { childList: true, subtree: true });
});
window.__requests = function () {
  var fetched = performance.getEntriesByType("resource").filter(function (e) {
    return e.initiatorType === "xmlhttprequest" || e.initiatorType === "fetch";
  });
  return [fetched.length, fetched.reduce(function (sum, e) { return sum + e.decodedBodySize; }, 0)];
};
"""


def make_world() -> tuple[Any, dict[int, Any]]:
    """A user (owner of a project) and one thread per case, each with a short history."""
    from django.contrib.auth.models import User

    from memoryapp import working
    from memoryapp.models import Membership, Project

    project = Project.objects.create(slug="tabs", name="Tabs")
    user = User.objects.create_user("bench", password=PASSWORD)
    Membership.objects.create(user=user, project=project, role=Membership.Role.OWNER)
    threads = {}
    for tabs in CASES:
        thread = working.thread_create(project=project, dataset=f"tabs-{tabs}")
        for n in range(6):
            working.message_append(
                thread=thread,
                role="user" if n % 2 == 0 else "assistant",
                content=f"history line {n}",
            )
        threads[tabs] = thread
    return project, threads


class FrameCounter:
    """A WebSocket client on a thread's socket, counting frames and bytes by event name."""

    def __init__(self, url: str, cookie: str, origin: str) -> None:
        self.url, self.cookie, self.origin = url, cookie, origin
        self.counts: dict[str, list[int]] = {}
        self.lock = threading.Lock()
        self.ready = threading.Event()
        self.stop = False
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self.thread.start()
        if not self.ready.wait(10):
            raise SystemExit(f"the frame counter could not connect to {url}")

    async def _run(self) -> None:
        import websockets

        async with websockets.connect(
            self.url,
            additional_headers={"Cookie": self.cookie},
            origin=self.origin,  # type: ignore[arg-type]
        ) as ws:
            self.ready.set()
            while not self.stop:
                try:
                    raw = await asyncio.wait_for(ws.recv(), 0.2)
                except TimeoutError:
                    continue
                event = json.loads(raw).get("event", "?")
                size = len(raw.encode() if isinstance(raw, str) else raw)
                with self.lock:
                    frames, sent = self.counts.get(event, [0, 0])
                    self.counts[event] = [frames + 1, sent + size]

    def take(self) -> dict[str, list[int]]:
        with self.lock:
            counts, self.counts = self.counts, {}
        return counts


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Case:
    """The open tabs of one thread, its frame counter and its per-turn samples."""

    def __init__(self, browser: Any, base: str, project: Any, thread: Any, tabs: int) -> None:
        self.tabs, self.thread = tabs, thread
        self.context = browser.new_context()
        self.context.add_init_script(PAGE_PROBE)
        self.pages = [self.context.new_page() for _ in range(tabs)]
        login = self.pages[0]
        login.goto(f"{base}/login/")
        login.get_by_label("Username").fill("bench")
        login.get_by_label("Password").fill(PASSWORD)
        login.get_by_test_id("login-submit").click()
        login.wait_for_url("**/dashboard/threads/**")
        url = f"{base}/dashboard/threads/{thread.pk}/?projectId={project.pk}"
        for page in self.pages:
            page.goto(url)
            try:
                page.wait_for_selector("[data-testid=live-status][data-state=open]", timeout=15_000)
            except Exception as exc:
                state = page.evaluate("(document.getElementById('live-status') || {}).textContent")
                raise SystemExit(
                    f"the thread page's live socket did not open ({state!r}) at {page.url}"
                ) from exc
        cookies = {c["name"]: c["value"] for c in self.context.cookies()}
        self.cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
        ws_path = self.pages[0].evaluate("document.getElementById('live-root').dataset.wsPath")
        self.counter = FrameCounter(base.replace("http", "ws") + ws_path, self.cookie, base)
        self.chat = f"{base}/dashboard/chat/threads/{thread.pk}/chat?projectId={project.pk}"
        self.headers = {
            "X-CSRFToken": cookies["csrftoken"],
            "Cookie": self.cookie,
            "Origin": base,
            "Referer": url,
        }
        self.samples: list[dict[str, Any]] = []

    def turn(self, client: Any, n: int, server_pid: int, keep: bool) -> None:
        """Send turn ``n``, wait until every tab shows its reply, pause; record if ``keep``."""
        self.counter.take()
        requests_before = [page.evaluate("window.__requests()") for page in self.pages]
        cpu_before = cpu_seconds(server_pid)
        wall_start = time.time()
        start = time.perf_counter()
        resp = client.post(
            self.chat,
            json={"content": f"turn {n}: tell me about the history"},
            headers=self.headers,
        )
        elapsed = time.perf_counter() - start
        if resp.status_code != 201:
            raise SystemExit(f"chat answered {resp.status_code}: {resp.text[:300]}")
        seq = str(resp.json()["assistantMessage"]["sequenceNumber"])
        shown = []
        for page in self.pages:
            page.wait_for_function("seq => seq in window.__seen", arg=seq, timeout=15_000)
            shown.append(page.evaluate("seq => window.__seen[seq]", seq))
        self.pages[0].wait_for_timeout(PAUSE_S * 1000)
        cpu = cpu_seconds(server_pid) - cpu_before
        after = [page.evaluate("window.__requests()") for page in self.pages]
        requests = [a[0] - b[0] for a, b in zip(after, requests_before, strict=True)]
        fetched = [a[1] - b[1] for a, b in zip(after, requests_before, strict=True)]
        frames = self.counter.take()
        if keep:
            self.samples.append(
                {
                    "turn_ms": elapsed * 1000,
                    "shown_ms": max(shown) - wall_start * 1000,
                    "cpu_ms": cpu * 1000,
                    "refetches_per_tab": sum(requests) / len(requests),
                    "refetched_bytes_per_tab": sum(fetched) / len(fetched),
                    "frames": frames,
                }
            )

    def summary(self) -> dict[str, Any]:
        turns = [s["turn_ms"] for s in self.samples]
        shown = [s["shown_ms"] for s in self.samples]
        by_event: dict[str, list[float]] = {}
        for sample in self.samples:
            for event, (count, size) in sample["frames"].items():
                acc = by_event.setdefault(event, [0.0, 0.0])
                acc[0] += count / len(self.samples)
                acc[1] += size / len(self.samples)
        return {
            "tabs": self.tabs,
            "turns": len(self.samples),
            "turn_p50_ms": statistics.median(turns),
            "turn_p90_ms": percentile(turns, 90),
            "shown_p50_ms": statistics.median(shown),
            "shown_p90_ms": percentile(shown, 90),
            "server_cpu_ms_per_turn": statistics.mean(s["cpu_ms"] for s in self.samples),
            "refetches_per_turn_per_tab": statistics.mean(
                s["refetches_per_tab"] for s in self.samples
            ),
            "refetched_bytes_per_turn_per_tab": round(
                statistics.mean(s["refetched_bytes_per_tab"] for s in self.samples)
            ),
            "frames_per_turn": round(sum(v[0] for v in by_event.values()), 2),
            "bytes_per_turn": round(sum(v[1] for v in by_event.values())),
            "frames_by_event": {
                k: [round(v[0], 2), round(v[1])] for k, v in sorted(by_event.items())
            },
        }

    def close(self) -> None:
        self.counter.stop = True
        self.counter.thread.join(2)
        self.context.close()


def run(
    browser: Any, base: str, project: Any, threads: dict[int, Any], turns: int, pid: int
) -> list[dict[str, Any]]:
    """Both cases open at once; turns interleaved, the order alternating every round."""
    import httpx

    cases = [Case(browser, base, project, threads[t], t) for t in CASES]
    try:
        with httpx.Client(timeout=30) as client:
            for r in range(WARMUP + turns):
                order = cases if r % 2 == 0 else cases[::-1]
                for case in order:
                    case.turn(client, r, pid, keep=r >= WARMUP)
        return [case.summary() for case in cases]
    finally:
        for case in cases:
            case.close()


def print_report(label: str, results: list[dict[str, Any]], turns: int) -> None:
    one, three = results
    print(
        f"bench_tabs on {label}, offline model, {turns} turns per case (after {WARMUP} warm-up), interleaved"
    )
    for r in results:
        print(
            f"  {r['tabs']} tab(s): turn p50 {r['turn_p50_ms']:.0f} ms (p90 {r['turn_p90_ms']:.0f}), "
            f"shown in every tab p50 {r['shown_p50_ms']:.0f} ms (p90 {r['shown_p90_ms']:.0f}), "
            f"server CPU {r['server_cpu_ms_per_turn']:.0f} ms/turn, "
            f"{r['refetches_per_turn_per_tab']:.2f} refetches/turn/tab "
            f"({r['refetched_bytes_per_turn_per_tab']} bytes)"
        )
        print(
            f"     per turn to one tab: {r['frames_per_turn']} frames, {r['bytes_per_turn']} bytes "
            f"{{event: [frames, bytes]}} {r['frames_by_event']}"
        )
    print(
        f"  ratio 3 tabs / 1 tab, turn p50: {three['turn_p50_ms'] / one['turn_p50_ms']:.2f} (goal <= 1.2)"
    )
    print(f"  ratio 3 tabs / 1 tab, shown p50: {three['shown_p50_ms'] / one['shown_p50_ms']:.2f}")
    print(
        f"  ratio 3 tabs / 1 tab, server CPU per turn: {three['server_cpu_ms_per_turn'] / one['server_cpu_ms_per_turn']:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--turns", type=int, default=20, help=f"measured turns per case (after {WARMUP} warm-up)"
    )
    parser.add_argument("--port", type=int, default=8161, help="the server's port on 127.0.0.1")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    with throwaway_database("sqlite") as label:
        from playwright.sync_api import sync_playwright

        project, threads = make_world()
        log = Path(tempfile.mkdtemp(prefix="bench-tabs-")) / "server.log"
        server = start_server("uvicorn", args.port, log, debug=True)
        base = f"http://127.0.0.1:{args.port}"
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                results = run(browser, base, project, threads, args.turns, server.pid)
                browser.close()
        finally:
            server.terminate()
            server.wait(10)
    if args.json:
        print(json.dumps({"database": label, "cases": results}, indent=2))
        return
    print_report(label, results, args.turns)


if __name__ == "__main__":
    main()
