"""The queue's refusal, apart from db.queue so that the modules db.queue builds on (db.admission) can raise its kind
too: callers catch db.queue.QueueError (the same class) and get every refusal of a queue operation."""
from __future__ import annotations


class QueueError(RuntimeError):
    """A queue operation cannot be done as asked (unknown job, job already finished)."""
