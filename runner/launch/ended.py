"""A worker stopped (SIGTERM, SIGINT) with a job unfinished hands it back, and where a cluster's scheduler stopped it,
says so in the scheduler's words: "the worker's Slurm job 812_3 hit its time limit while compiling". A cancel or a
preemption re-queues the job without counting the attempt; a time limit counts it (lab.scheduler.ENDINGS), so a job
longer than any allocation ends after its attempts instead of going round for ever. An attempt
(runner.worker.attempt) calls it once its child is stopped: the job never runs in two places at once."""
from __future__ import annotations

import logging
import threading

from db import cluster, queue
from runner.launch import identity

log = logging.getLogger("compile_lab.worker")


def with_worker(stop: threading.Event) -> bool:
    """Whether a child that died of a signal (or whose preloaded parent died) went with its worker's stop: under a
    scheduler, which signals every process of a job at once."""
    return identity.stopped_with_worker(stop)


def hand_back(store, claim: queue.Claim, phase: str) -> None:
    """Back to the queue (or, a time limit on its last attempt, failed), in the words of whoever stopped the worker."""
    ending = identity.ending()
    if ending is None:
        store.release(claim, f"worker {store.worker_id} stopped while {phase}; re-queued without counting the attempt")
        return
    words = f"{ending.words} while {phase}"
    log.warning("job %s: %s; handing it back%s", claim.job_id, words, " (the attempt counts)" if ending.counted else "")
    store.retry("hand the job back", lambda: cluster.requeue_ended(
        store.engine, claim.job_id, claim.token, words, ending.counted))
