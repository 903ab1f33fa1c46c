"""Python's garbage collector's pauses while a call runs (gc.callbacks): a compile allocates millions of objects, and
each full collection walks every object the process holds, so a process that holds more (a job's child: the lab's own
modules, both sides' models, the accuracy references) pays more of them inside its compiled first call than a user's
own script does. Measured apart and named in the record (detail.first_call_parts.gc_pause_s)."""
from __future__ import annotations

import gc
import time


class Pauses:
    """Seconds and count of the collections that ran inside the `with` block, and of the full ones alone."""

    def __init__(self):
        self.seconds = self.full_seconds = 0.0
        self.collections = self.full = 0
        self._began: float | None = None

    def _heard(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        elif self._began is not None:
            took = time.perf_counter() - self._began
            self._began = None
            self.seconds += took
            self.collections += 1
            if info.get("generation") == 2:
                self.full_seconds += took
                self.full += 1

    def __enter__(self) -> "Pauses":
        gc.callbacks.append(self._heard)
        return self

    def __exit__(self, *_exc) -> None:
        gc.callbacks.remove(self._heard)

    def as_dict(self) -> dict:
        return {"seconds": self.seconds, "collections": self.collections, "full_seconds": self.full_seconds,
                "full_collections": self.full}
