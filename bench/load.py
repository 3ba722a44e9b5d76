"""Load on several server processes, then a check that nothing was lost (issue 12).

16 client threads (``--clients``) for 60 seconds (``--seconds``) on loopback against two
uvicorn processes (``--servers``) and two db_worker processes (``--workers``) on a
throwaway PostgreSQL database and Redis (``--database postgres``, the default; ``sqlite``
runs one server on a SQLite file, with Redis if it answers). The mix, across 100 threads
(``--threads``; a fifth of them an agent's, with memory notes): appends (half of all calls;
the ordinary threads have autoCompactThreshold 10, so appends cross it and compact),
prepares, recalls, manual compactions, end() and memory tool calls (tests/cluster.py,
``Load``). Prints throughput, p50/p99 per endpoint and the errors; then waits for the
background jobs and verifies every invariant of every thread (memoryapp.audit), that every
job succeeded, and that every acknowledged append is stored exactly once under the number
its answer gave. Exits 1 on any error or problem.

    .venv/bin/python bench/load.py [--seconds 60] [--clients 16] [--database postgres]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import throwaway_database  # puts the repository on sys.path

from tests.cluster import BASE, Client, Cluster, Load, cluster_env, redis_url_answering, verify

REDIS_DB = 9


def _setup(port: int, threads: int) -> Load:
    """A project, a key, an agent with memory, and the threads; a Load over them."""
    from memoryapp.models import ApiKey, Project

    project = Project.objects.create(slug="load", name="Load")
    _, key = ApiKey.issue(project=project, name="load")
    client = Client(port, key)
    status, body = client.call(
        "PUT", "/v1/memory/agents/keeper", {"systemPrompt": "Keep notes.", "memory": {}}
    )
    assert status == 201, body
    agents = threads // 5
    made = [
        client.call("POST", BASE, {"dataset": "u1", "autoCompactThreshold": 10})
        for _ in range(threads - agents)
    ]
    made += [client.call("POST", BASE, {"dataset": "u1", "agent": "keeper"}) for _ in range(agents)]
    assert all(status == 201 for status, _ in made), made
    ids = [body["threadId"] for _, body in made]
    return Load([], key, ids[: threads - agents], ids[threads - agents :], "u1", seed=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--threads", type=int, default=100)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="postgres")
    args = parser.parse_args()
    redis_url = redis_url_answering(REDIS_DB)
    if args.database == "postgres" and redis_url is None:
        raise SystemExit("no Redis answers on 127.0.0.1:6379 (needed with --database postgres)")
    servers = args.servers if args.database == "postgres" else 1
    with throwaway_database(args.database) as label, tempfile.TemporaryDirectory() as logs:
        env = cluster_env(os.environ.get("DATABASE_URL", ""), redis_url or "", debug=True)
        if args.database == "sqlite":
            env.pop("DATABASE_URL")
        cluster = Cluster(env, Path(logs), servers=servers, workers=args.workers)
        cluster.start()
        try:
            load = _setup(cluster.ports[0], args.threads)
            load.ports = cluster.ports
            print(
                f"{label}; {servers} servers, {args.workers} workers, Redis {redis_url or 'none'}"
            )
            print(f"{args.clients} clients for {args.seconds:.0f} s over {args.threads} threads")
            started = time.monotonic()
            load.run(args.clients, seconds=args.seconds)
            print(load.report(time.monotonic() - started))
            problems = verify(load)
        finally:
            cluster.stop()
    print(f"acknowledged appends: {len(load.acked)}; episode jobs queued: {len(load.jobs)}")
    print(f"problems after the run: {len(problems)}")
    for problem in problems[:50]:
        print(f"  {problem}")
    return 1 if problems or load.errors else 0


if __name__ == "__main__":
    sys.exit(main())
