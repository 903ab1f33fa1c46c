"""How the worker starts a job's child: a fresh interpreter (`fresh`), or a fork of the preloaded
parent (`fork`, runner/child/zygote.py, the default). Both give a child in its own process group whose
stdout/stderr go to the job's log; the worker supervises either through the same small handle."""
from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from runner.child.preload import FAMILIES_ENV, FAMILY_MODULES
from runner.child.process import WORKER_PID_ENV

SPAWN_METHODS = ("fork", "fresh", "inline")


class SpawnError(RuntimeError):
    """The preloaded parent could not start a child (it died, or answered nonsense)."""


class FreshChild:
    def __init__(self, argv: list[str], env: dict, cwd: Path, log: Path):
        with open(log, "ab") as out:
            self._proc = subprocess.Popen([sys.executable, "-m", "runner.child", *argv], cwd=cwd, env=env,
                                          stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True)
        self.pid = self._proc.pid
        try:  # readable the moment the child exits: the worker learns it at once, not at its next poll
            self._pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):  # not Linux 5.3+: Popen.wait's own polling
            self._pidfd = None

    def wait(self, timeout: float) -> int | None:
        """The exit code (negative: killed by that signal), or None if still running after timeout."""
        if self._pidfd is not None and self._proc.returncode is None:
            select.select([self._pidfd], [], [], timeout)
            rc = self._proc.poll()
            if rc is not None:
                os.close(self._pidfd)
                self._pidfd = None
            return rc
        try:
            return self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None


class Spawner:
    """A way to start a job's child (as rq's worker classes share a base): `start` one; `prepare`, `wait_ready` and
    `close` do nothing unless the way keeps something running between jobs (the preloaded parent does)."""

    method = ""

    def prepare(self) -> None:
        """Start what children are started from, if anything (its imports run while the worker does the rest)."""

    def wait_ready(self, timeout: float = 600) -> None:
        """Until a first child can start at once."""

    def prewarm(self, env: dict, family: str = "") -> None:
        """Start the next job's child now, ahead of its job (only the preloaded parent can)."""

    def warm_first(self, env: dict, timeout: float = 120) -> bool:
        """At a CUDA worker's start: warm its first job's child now and wait until it is (prewarm, then its word),
        so the first job finds one as every later job does. Whether a child is warm."""
        return False

    def start(self, argv: list[str], env: dict, cwd: Path, log: Path, warm_ok: bool = False, family: str = ""):
        """`warm_ok`: a child started ahead (prewarm) may run it (a CUDA job); `family`: its model's (family_of)."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop what `prepare` started."""


class FreshSpawner(Spawner):
    method = "fresh"

    def start(self, argv: list[str], env: dict, cwd: Path, log: Path, warm_ok: bool = False,
              family: str = "") -> FreshChild:
        return FreshChild(argv, env, cwd, log)


class ForkedChild:
    def __init__(self, spawner: "ForkSpawner", pid: int):
        self._spawner = spawner
        self.pid = pid
        self.returncode: int | None = None

    def wait(self, timeout: float) -> int | None:
        """As Popen.wait: once the child has exited, every later call returns its code at once. Returns None
        early (and at once from then on) when the child has said its result is ready (`result_ready`)."""
        if self.returncode is None:
            self.returncode = self._spawner.wait_exit(self.pid, timeout)
        return self.returncode

    @property
    def result_ready(self) -> bool:
        """The child said its result file is complete (runner.child.process.result_ready); it may still be exiting."""
        return self.pid in self._spawner._results

    def when_measured(self, then: Callable[[], None]) -> None:
        """Call `then` as soon as the child says it is done with the GPU (runner.child.process.measured), as that is
        heard (while the worker waits on it); never, if it ends without saying so."""
        self._spawner._when_measured[self.pid] = then

    def forget(self) -> None:
        """Its exit, when it comes, is nobody's business (the worker has what it needs and stopped its group)."""
        self._spawner.forget(self.pid)


class ForkSpawner(Spawner):
    """Talks to one preloaded parent, started on first use and restarted if it dies."""

    method = "fork"

    def __init__(self, env: dict, cwd: Path):
        self._env, self._cwd = env, cwd
        self._proc: subprocess.Popen | None = None
        self._buffer = b""
        self._exits: dict[int, int] = {}
        self._results: set[int] = set()  # children that said their result is ready
        self._when_measured: dict[int, Callable[[], None]] = {}  # what to do once a child is done with the GPU
        self._forgotten: set[int] = set()  # children whose exit nobody waits for
        self._ready = False

    def _ensure(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            # its own session: a Ctrl-C or SIGTERM meant for the worker's group must not kill it (and with
            # it the running job); it still dies with the worker (parent-death signal, runner.child.process)
            self._proc = subprocess.Popen([sys.executable, "-m", "runner.child.zygote"], cwd=self._cwd, env=self._env,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None,
                                          start_new_session=True)
            self._buffer = b""
            self._ready = False
        return self._proc

    def prepare(self) -> None:
        """Start the preloaded parent now (its imports run while the worker does the rest of its start)."""
        self._ensure()

    def wait_ready(self, timeout: float = 600) -> None:
        """Until the preloaded parent has imported what it preloads: a worker is ready when its first job
        can start at once."""
        while not self._ready:
            msg = self._read(timeout=timeout)
            if msg is None:
                raise SpawnError(f"the preloaded parent was not ready within {timeout:g} s")
            self._take(msg)

    def _take(self, msg: dict) -> None:
        if msg.get("ready"):
            self._ready = True
        elif msg.get("result"):
            self._results.add(msg["pid"])
        elif msg.get("measured"):
            self._when_measured.pop(msg["pid"], lambda: None)()
        elif "returncode" in msg:
            self._when_measured.pop(msg["pid"], None)
            if msg["pid"] in self._forgotten:
                self._forgotten.discard(msg["pid"])
                self._results.discard(msg["pid"])
            else:
                self._exits[msg["pid"]] = msg["returncode"]

    def forget(self, pid: int) -> None:
        if self._exits.pop(pid, None) is None:
            self._forgotten.add(pid)
        else:
            self._results.discard(pid)

    def prewarm(self, env: dict, family: str = "") -> None:
        """Ask the preloaded parent, if it is up, to fork the next job's child now: it makes its CUDA context and
        library handles while this job ends and the next is claimed (runner.child.zygote, runner.child.prewarm)."""
        if self._proc is not None and self._ready:
            self._say({"warm": True, "env": {**env, WORKER_PID_ENV: str(self._proc.pid)}})

    def warm_first(self, env: dict, timeout: float = 120) -> bool:
        if self._proc is None or not self._ready:
            return False
        self._say({"warm": True, "tell": True, "env": {**env, WORKER_PID_ENV: str(self._proc.pid)}})
        while (msg := self._read(timeout=timeout)) is not None:
            if "warmed" in msg:
                return bool(msg["warmed"])
            self._take(msg)
        return False

    def drop_warm(self) -> None:
        """Have the preloaded parent kill the child it warmed ahead, if any, and wait until it is gone: another
        parent's child is about to run a job, and an idle CUDA context on its GPU would be another process there."""
        if self._proc is None or not self._ready:
            return
        self._say({"drop": True})
        while (msg := self._read(timeout=60)) is not None and not msg.get("dropped"):
            self._take(msg)  # exits and results of this parent's children, heard meanwhile

    def _say(self, request: dict) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(BrokenPipeError):  # it died: the next start finds out and starts another
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()

    def start(self, argv: list[str], env: dict, cwd: Path, log: Path, warm_ok: bool = False) -> ForkedChild:
        proc = self._ensure()
        # the job's parent is the preloaded parent: the child checks that pid (runner.child.process)
        request = {"argv": argv, "env": {**env, WORKER_PID_ENV: str(proc.pid)}, "cwd": str(cwd), "log": str(log),
                   "warm_ok": warm_ok}
        try:
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
        except BrokenPipeError:
            raise SpawnError("the preloaded parent died before it could fork the job") from None
        while True:  # the first answer about an unknown pid is the fork we asked for
            msg = self._read(timeout=600)
            if msg is None:
                raise SpawnError("the preloaded parent did not answer within 600 s")
            if "returncode" in msg or "warmed" in msg or msg.get("ready") or msg.get("result") or msg.get("dropped") \
                    or msg.get("measured"):
                self._take(msg)  # ("dropped", "warmed": a drop_warm's or warm_first's answer come too late for it)
            else:
                self._exits.pop(msg["pid"], None)  # a reused pid: an old exit is not this child's
                self._results.discard(msg["pid"])
                return ForkedChild(self, msg["pid"])

    def wait_exit(self, pid: int, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while pid not in self._exits:
            if pid in self._results:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            msg = self._read(timeout=left)
            if msg is not None:
                self._take(msg)
        return self._exits.pop(pid)

    def _read(self, timeout: float) -> dict | None:
        """One message from the preloaded parent, or None on timeout. If the parent died, its
        children died with it (parent-death signal): report the pending ones as killed."""
        proc = self._proc
        deadline = time.monotonic() + timeout
        fd = proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                proc.wait()
                raise SpawnError(f"the preloaded parent exited (code {proc.returncode})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


class FamilySpawner(Spawner):
    """One preloaded parent per kind of job (runner.child.preload): the plain one (torch and the compiler) for a model
    file and an import path, and one per model family the worker offers (hf:, timm:), started at that family's first
    job, with the family's common imports too. A fresh script of a zoo model imports no transformers, and with it
    preloaded that model's first compile ran slower (dynamo tracing 0.54 s against a script's 0.17, this 2-core box:
    bench/README.md); a GPT-2 script imports transformers but not timm."""

    method = "fork"

    def __init__(self, env: dict, cwd: Path):
        self._env, self._cwd = {k: v for k, v in env.items() if k != FAMILIES_ENV}, cwd
        self.families = [f for f in env.get(FAMILIES_ENV, "").split(",") if f in FAMILY_MODULES]
        self.parents = {"": ForkSpawner(self._env, cwd)}

    def parent(self, family: str = "") -> ForkSpawner:
        family = family if family in self.families else ""
        if family not in self.parents:
            self.parents[family] = ForkSpawner({**self._env, FAMILIES_ENV: family}, self._cwd)
        return self.parents[family]

    def prepare(self) -> None:
        self.parent().prepare()

    def wait_ready(self, timeout: float = 600) -> None:
        self.parent().wait_ready(timeout)

    def prewarm(self, env: dict, family: str = "") -> None:
        self.parent(family).prewarm(env)

    def warm_first(self, env: dict, timeout: float = 120) -> bool:
        return self.parent().warm_first(env, timeout)  # the plain parent's: a job of a family drops it (start)

    def start(self, argv: list[str], env: dict, cwd: Path, log: Path, warm_ok: bool = False,
              family: str = "") -> ForkedChild:
        """A child from its family's parent; where that parent cannot fork one (its imports touched CUDA, say), the
        family's jobs go to the plain parent from then on (they import the family themselves, in *model build*)."""
        family = family if family in self.families else ""
        for other, parent in self.parents.items():
            if other != family:
                parent.drop_warm()  # its child warmed ahead would sit on the GPU beside this job
        try:
            return self.parent(family).start(argv, env, cwd, log, warm_ok)
        except SpawnError:
            if not family:
                raise
        self.families.remove(family)
        self.parents.pop(family).close()
        return self.parent().start(argv, env, cwd, log, warm_ok)

    def close(self) -> None:
        for parent in self.parents.values():
            parent.close()


def family_of(model: str) -> str:
    """The family whose preloaded parent runs a job of this model ("": the plain one)."""
    prefix = model.split(":", 1)[0] if ":" in model else ""
    return prefix if prefix in FAMILY_MODULES else ""


class InlineChild:
    """A job that already ran in the worker's own process: nothing to wait for, nothing to kill."""

    inline = True

    def __init__(self, returncode: int):
        self.pid, self.returncode = os.getpid(), returncode

    def wait(self, timeout: float) -> int:
        return self.returncode


class InlineSpawner(Spawner):
    """`--spawn inline`, for debugging a job (as rq's SimpleWorker): the child's work runs in the worker's own
    process, in the foreground, so `breakpoint()` in a model or `python -m pdb -m runner work --spawn inline
    --once` stops in it. The job's environment (compile cache folders) is set for the run and restored. No
    isolation: no timeout, a crash takes the worker with it, torch stays loaded; never for measurements
    others rely on."""

    method = "inline"

    def start(self, argv: list[str], env: dict, cwd: Path, log: Path, warm_ok: bool = False,
              family: str = "") -> InlineChild:
        from runner.child.process import parse_args, run_job

        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            rc = run_job(parse_args(argv))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        return InlineChild(rc)


def make_spawner(method: str, env: dict, cwd: Path):
    if method not in SPAWN_METHODS:
        raise ValueError(f"spawn method must be one of {', '.join(SPAWN_METHODS)}, got {method!r}")
    return {"fork": lambda: FamilySpawner(env, cwd), "fresh": FreshSpawner, "inline": InlineSpawner}[method]()
