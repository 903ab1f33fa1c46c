"""A worker's own model folders, watched while it idles: a model file added, removed or edited there is read again and
offered without a restart (the worker publishes the new catalog; each job's child reads its model file anew)."""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Iterable

from runner import zoo

log = logging.getLogger("compile_lab.worker")


def folders_state(models_dirs: Iterable[str | Path]) -> tuple:
    """What the folders hold, cheaply: each model file's path, size and modification time."""
    out = []
    for d in models_dirs:
        for path in sorted(Path(d).glob("*.py")) if Path(d).is_dir() else ():
            try:
                st = path.stat()
            except OSError:  # removed between the listing and the look
                continue
            out.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(out)


class ModelFolders:
    """The folders' state when the catalog was last read, and when they were last looked at."""

    def __init__(self, models_dirs: list[str], every_s: float = 2.0):
        self.dirs, self.every_s = list(models_dirs), every_s
        self.seen, self.checked = folders_state(self.dirs), time.monotonic()
        self.problems: list[str] = []  # the model files that do not read, each with why

    def changed(self, entries: dict) -> dict | None:
        """At most every `every_s`: the catalog read again when a file changed, or None while it is unchanged. A file
        that no longer reads (a syntax error half-way through an edit) is left out, the folder's other models stay
        offered, and `problems` names it and why (the worker publishes them: Submit and `runner models` show them)."""
        if not self.dirs or time.monotonic() - self.checked < self.every_s:
            return None
        self.checked = time.monotonic()
        seen = folders_state(self.dirs)
        if seen == self.seen:
            return None
        self.seen = seen
        try:
            read, problems = zoo.read_folders(self.dirs)
        except zoo.ModelFileError as e:  # a folder itself gone
            log.warning("the models folders changed but do not read (%s); offering the models as before", e)
            return None
        for problem in problems:
            log.warning("not offering a model file: %s", problem)
        self.problems = problems
        return read
