"""Every descendant of a job dies with it, whatever session or process group it moved to.

Killing the child's process group misses a helper that called setsid() (a daemonising library, a
`setsid` in a shell command): on a GPU it would keep its memory after the job is over. So the child
makes itself a *child subreaper* (PR_SET_CHILD_SUBREAPER): a descendant whose parent exits is
re-parented to the child instead of to init, and stays findable under it. Whoever ends a job (the
worker on timeout, cancel or a lost lease; the child's keeper when its lease runs out) walks that
tree in /proc and kills all of it. (A cgroup would hold even a process that escaped the tree by a
double fork before the subreaper was set, but most hosts do not hand one to an unprivileged worker.)
"""
from __future__ import annotations

import ctypes
import os
import signal

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Orphaned descendants of this process are re-parented to it (Linux 3.4+), not to init."""
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def proc_stats() -> dict[int, tuple[str, list[str]]]:
    """Every process in /proc: pid -> (its name, the fields of its stat line after the name: state, parent pid, ...,
    utime and stime at 11 and 12)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                head, sep, rest = f.read().decode(errors="replace").rpartition(")")  # the name may hold ) and spaces
        except OSError:  # exited while we looked, or not ours to read
            continue
        if sep:
            out[int(entry)] = (head[head.find("(") + 1:], rest.split())
    return out


def _parents() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter) for every process in /proc."""
    return {pid: (int(after[1]), after[0]) for pid, (_, after) in proc_stats().items()}


def descendants(root: int) -> list[int]:
    """Live (not zombie) descendants of `root`, parents before children."""
    table = _parents()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if table[pid][1] != "Z":
            found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def kill_tree(root: int, spare: int | None = None, rounds: int = 50) -> int:
    """SIGKILL every descendant of `root` (not root itself; `spare` excepted); returns how many.

    The root is stopped first so it cannot fork while we look, and it stays alive as the subreaper
    that catches the orphans of each killed process: the walk repeats until nothing is left."""
    try:
        os.kill(root, signal.SIGSTOP)
    except (ProcessLookupError, PermissionError):
        return 0
    killed: set[int] = set()
    for _ in range(rounds):
        live = [p for p in descendants(root) if p != spare]
        if not live:
            break
        for pid in live:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except (ProcessLookupError, PermissionError):
                pass
    return len(killed)
