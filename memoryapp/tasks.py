"""The background job kinds (memoryapp.jobs explains kinds, idempotency and retries).

Each kind is a function of the Job registered with ``job_kind``; memoryapp.apps imports
this module at start-up, so the server (which enqueues) and the db worker (which runs)
know the same kinds. To add one: a function here and its idempotency rule.
"""

from __future__ import annotations

from typing import Any

from memoryapp import compaction, episodic, serializers
from memoryapp.errors import ThreadNotFound
from memoryapp.jobs import job_kind
from memoryapp.models import CompactionRun, Job

COMPACTION = "compaction"
EPISODE = episodic.EPISODE_JOB


@job_kind(COMPACTION, key=lambda args: f"through:{args['throughSequence']}")
def compaction_job(job: Job) -> dict[str, Any]:
    """A manual "Compact now" from the dashboard (spec 002, POST compact, keepLast 0).

    Args: ``{"throughSequence": N}``, the thread's last sequence number when it was asked
    for; folds every un-compacted message up to N, so messages appended since stay
    verbatim. Idempotency: a second run finds those rows folded and writes nothing.
    Result: the compact response body (``compactedCount``, ``fromSequence``, ...) or
    ``{"ok": true, "compacted": false, "message": "Nothing to compact"}``. A failed model
    call fails the job (nothing changed, the error recorded on the thread too).
    """
    if job.thread_id is None:
        raise ThreadNotFound()
    through = int(job.args["throughSequence"])
    result = compaction.compact(
        thread_id=job.thread_id, keep_from_sequence=through + 1, trigger=CompactionRun.Trigger.JOB
    )
    if result is None:
        return dict(serializers.NOTHING_TO_COMPACT)
    return serializers.compaction_to_dict(result)


@job_kind(compaction.AUTO_COMPACTION_JOB, key=lambda args: f"auto:{args['keepFromSequence']}")
def auto_compaction_job(job: Job) -> dict[str, Any]:
    """The catch-up of an automatic compaction that one append's runs did not finish
    (memoryapp.compaction._hand_over; review item 7).

    Args: ``{"keepFromSequence": N}``, the newest un-compacted message when it was queued.
    Runs memoryapp.compaction.auto_compact as that append would have: under the thread's
    lease, only while the thread is still at its threshold, catching up again after each
    run. Idempotency: a second run finds the thread below its threshold and runs nothing.
    Result: ``{"runs": <runs committed>, "error": <the failed model call> | null}``.
    """
    if job.thread_id is None:
        raise ThreadNotFound()
    outcome = compaction.auto_compact(
        thread_id=job.thread_id, keep_from_sequence=int(job.args["keepFromSequence"])
    )
    return {"runs": len(outcome.runs), "error": outcome.error}


@job_kind(EPISODE, key=lambda args: f"episode:{args['fromSequence']}-{args['toSequence']}")
def episode_job(job: Job) -> dict[str, Any]:
    """The episode job end() queues (issue 8 items 1-2; memoryapp.episodic.episode_build).

    Args: ``{"fromSequence": A, "toSequence": B}``, the thread's raw messages A..B. Writes
    one episode with its facts and entities in one transaction after one model call.
    Idempotency: the episode starting at A is written at most once; a second run finds it
    and writes nothing. Result: ``{"episodeId", "created", "factsCreated",
    "factsMerged", "factsInvalidated"}``. A failed or unusable model answer fails the job
    (``Model call failed (<kind>): ...``) with nothing written.
    """
    if job.thread_id is None:
        raise ThreadNotFound()
    built = episodic.episode_build(
        thread_id=job.thread_id,
        from_sequence=int(job.args["fromSequence"]),
        to_sequence=int(job.args["toSequence"]),
    )
    return serializers.episode_built_to_dict(built)
