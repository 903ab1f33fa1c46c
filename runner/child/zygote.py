"""The preloaded parent (python -m runner.child.zygote): imports torch once, never touches CUDA, and forks
one fresh child per job, so a job starts in a fraction of a second instead of paying a new
interpreter and `import torch` (8-10 s on a GPU host) every time.

Each forked child still gets its own process (and process group), its own CUDA context (CUDA is
first initialised in the child), its own environment (compile cache dirs) and its own log.
Preloaded: torch, what a `torch.compile(model)` line imports (dynamo, inductor's front), what a CUDA job's
first compiled call imports (triton) and, in a family's own parent (runner.worker.spawn.FamilySpawner), what
building a model of that family imports (transformers; timm): runner/child/preload.py says why the first two and
the last change no measured number and how the third is added back to the compiled first call.

Protocol, one JSON object per line: we say {"ready": true} once preloaded; the worker writes {"argv", "env", "cwd",
"log"} on our stdin; we answer {"pid"} once forked, then {"pid", "returncode"} when that child exits (negative:
signal), and {"pid", "measured"} once it is done with the GPU. {"warm": true, "env"} forks the next job's child ahead
of its job, on a CUDA worker once a job's GPU work is done: it makes its CUDA context and math library handles
(runner.child.prewarm) beside the last job's end, then waits; no answer, but {"warmed": ok} once it is warm (or died
trying) where the request said "tell" (a worker's start, which waits for its first child's). A job request with
"warm_ok" (a CUDA job, the device's environment unchanged) is handed to it, or to one warmed for it then (every CUDA
job's child is made alike); else, on {"drop": true} (another parent's child runs the next job), or after WARM_KEEP_S
unused (an idle worker holds no GPU context), it is killed unheard of.
"""
from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time

from runner.child import nvml_facts

WARM_KEEP_S = float(os.environ.get("COMPILE_LAB_WARM_KEEP_S") or 30)  # a child warmed ahead and unused by then is killed
# what may differ between the environment a child was warmed in and its job's: read after the job starts (ours, the
# compile caches' places), not by the CUDA runtime or its libraries when they start
JOB_ENV_PREFIXES = ("COMPILE_LAB_", "TORCHINDUCTOR_", "TRITON_")


def _preload() -> None:
    # while preloading, "is there a GPU?" asks NVML, not the CUDA runtime: torch's runtime device count marks every
    # later fork as unable to use CUDA, and inductor's and triton's imports ask (on an H100, every forked job then
    # failed "Cannot re-initialize CUDA in forked subprocess" though torch.cuda.is_initialized() said False). NVML
    # itself is asked once, by a forked helper, before anything here starts a thread (nvml_facts.facts says why).
    nvml = nvml_facts.facts()
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    import numpy  # noqa: F401
    import torch  # noqa: F401

    with nvml_facts.answered(torch, nvml):
        import lab.spec  # noqa: F401
        import runner.child.measure  # noqa: F401  (what every job imports: the protocol and its steps)
        import runner.child.process  # noqa: F401
        import runner.zoo  # noqa: F401
        from runner.child import preload

        if preload.enabled():
            preload.compile_line()
            preload.first_call_modules()
            preload.cudnn_libraries()
            preload.family_modules()  # this parent's family, if any (its imports may ask about the GPU: here)
    os.environ.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
    if torch.cuda.is_initialized() or not _forks_can_use_cuda():  # the worker then preloads less, or uses fresh ones
        sys.exit("compile-lab: a child forked from the preloaded parent cannot use CUDA (preloading touched it); "
                 "not forking children")


def _forks_can_use_cuda() -> bool:
    """A canary: fork once and, where there is a GPU, initialise CUDA in the child. Whatever the preloaded imports
    did to the CUDA runtime, a job forked from here would fail the same way; better found before the first job."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.init()
        except Exception:
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _run_child(request: dict, result_fd: int, warmed: dict | None = None, heap: dict | None = None) -> None:
    """In the forked child: become a job process, run runner.child.process's main, never return. `warmed`: what
    this child did before its job came (_warm_child), said to the job (runner.child.prewarm.ENV); `heap`: how its
    memory was made its own (runner.child.prewarm.own_heap; here, if it was not while warming)."""
    code = 1
    try:
        if warmed is None:
            _become_own_group()
            from runner.child.prewarm import own_heap

            heap = own_heap()
        os.chdir(request["cwd"])
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.environ.clear()
        os.environ.update(request["env"])
        from runner.child import prewarm
        from runner.child import process as child

        os.environ[child.RESULT_FD_ENV] = str(result_fd)
        if warmed is not None:
            os.environ[prewarm.ENV] = json.dumps(warmed)
        os.environ[prewarm.HEAP_ENV] = json.dumps(heap)

        code = child.main(request["argv"])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _become_own_group() -> None:
    os.setsid()  # its own process group: the worker kills the whole group on timeout or cancel
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)


def _warm_child(request: dict, job_r: int, warmed_w: int, result_fd: int) -> None:
    """In a child forked ahead of its job: its own group, the worker's environment, its CUDA context and math
    libraries' handles made (runner.child.prewarm.warm) while its heap is made its own (prewarm.own_heap_beside);
    one byte on `warmed_w` says so. Then its job request is read from `job_r` (to its end) and run as any forked
    child's; none (the pipe closed): it exits. Never returns."""
    try:
        _become_own_group()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # until its job's log is known, what it says goes nowhere
            os.dup2(devnull, fd)
        os.environ.clear()
        os.environ.update(request["env"])
        from runner.child import prewarm
        from runner.child.process import _die_with_parent

        _die_with_parent()
        heap, warmed = prewarm.own_heap_beside(prewarm.warm)  # its mappings read first: the driver's are its own
        os.write(warmed_w, b"w")
        os.close(warmed_w)
        began, chunks = time.monotonic(), []
        from runner.child.build import warm_libraries

        prewarm.while_waiting(job_r, warmed, warm_libraries)
        while chunk := os.read(job_r, 65536):
            chunks.append(chunk)
        if not chunks:
            os._exit(0)
        job = json.loads(b"".join(chunks))
    except BaseException:
        os._exit(1)
    _run_child(job, result_fd, warmed | {"waited_s": round(time.monotonic() - began, 3), "ahead": "argv" not in request}, heap)


def _same_device_env(a: dict, b: dict) -> bool:
    """Whether a child warmed in environment `a` may run a job meant for environment `b`."""
    return all(a.get(k) == b.get(k) for k in {*a, *b} if not k.startswith(JOB_ENV_PREFIXES))


def main() -> int:
    from runner.child.process import _die_with_parent

    _die_with_parent()  # the worker died: so do we (and our children, through theirs)
    _preload()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select() through the wakeup fd
    out = sys.stdout
    stdin = sys.stdin.fileno()
    buffer = b""
    children: dict[int, int | None] = {}  # pid -> the read end of its "result ready" pipe, until it is heard

    def send(msg: dict) -> None:
        out.write(json.dumps(msg) + "\n")
        out.flush()

    def hear(pid: int) -> None:
        """What the child said, if it said more: "g" (done with the GPU: runner.child.process.measured) as {"pid",
        "measured": true}, then its "result ready" byte as {"pid", "result": true} (always before its exit)."""
        fd = children.get(pid)
        if fd is None:
            return
        os.set_blocking(fd, False)
        try:
            said = os.read(fd, 16)
        except BlockingIOError:
            return
        if said[:1] == b"g":
            send({"pid": pid, "measured": True})
            if not (said := said[1:]):  # its result, or its end, is still to come
                return
        children[pid] = None
        os.close(fd)
        if said:
            send({"pid": pid, "result": True})

    try:
        send({"ready": True})
    except BrokenPipeError:  # the worker gave up on us while we preloaded (its start failed): nothing to serve
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())  # and no second error flushing at exit
        return 0

    warm: dict | None = None  # the child forked ahead of its job: pid, job_w, warmed_r (None once warm), env, until
    unheard_of: set[int] = set()  # warm children killed unused: the worker never learnt their pids

    def fork(request: dict, warm_first: bool) -> int:
        out.flush()
        said_r, said_w = os.pipe()
        job_r, job_w = os.pipe() if warm_first else (-1, -1)
        warmed_r, warmed_w = os.pipe() if warm_first else (-1, -1)
        pid = os.fork()
        if pid == 0:
            for fd in (said_r, job_w, warmed_r):
                if fd >= 0:
                    os.close(fd)
            _warm_child(request, job_r, warmed_w, said_w) if warm_first else _run_child(request, said_w)
        for fd in (said_w, job_r, warmed_w):
            if fd >= 0:
                os.close(fd)
        children[pid] = said_r
        if warm_first:
            nonlocal warm
            warm = {"pid": pid, "job_w": job_w, "warmed_r": warmed_r, "env": request["env"],
                    "until": time.monotonic() + WARM_KEEP_S, "tell": bool(request.get("tell"))}
        return pid

    def warmed(w: dict) -> None:
        """Its byte read: warmed ("ok"), or it died trying (none), or it is still warming (left to the next look)."""
        os.set_blocking(w["warmed_r"], False)
        try:
            w["ok"] = os.read(w["warmed_r"], 1) == b"w"
        except BlockingIOError:
            return
        os.close(w["warmed_r"])
        w["warmed_r"] = None
        if w.get("tell"):
            send({"warmed": w["ok"]})

    def drop_warm() -> None:
        """Kill the child warmed ahead (unused) and wait for its end, so its CUDA context is gone before another
        child makes one; its exit is not said (the worker never knew its pid)."""
        nonlocal warm
        if warm is None:
            return
        pid = warm["pid"]
        if warm["tell"] and warm["warmed_r"] is not None:  # killed before its word: warm_first must not wait for it
            send({"warmed": False})
        unheard_of.add(pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        for fd in (warm["job_w"], warm["warmed_r"]):
            if fd is not None:
                os.close(fd)
        warm = None
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:  # reaped already, by the loop below, which says nothing of it
            return
        unheard_of.discard(pid)
        said_r = children.pop(pid, None)
        if said_r is not None:
            os.close(said_r)

    def hand_to_warm(request: dict) -> int | None:
        """The job handed to the warmed child if it may run it (its pid), else None (the warmed child killed)."""
        nonlocal warm
        if warm is None:
            return None
        fits = request.get("warm_ok") and _same_device_env(warm["env"], request["env"])
        if fits and warm["warmed_r"] is not None:  # still warming: what a new child would do too
            select.select([warm["warmed_r"]], [], [], max(0.0, warm["until"] - time.monotonic()))
            warmed(warm)
        if not fits or not warm.get("ok") or warm["pid"] not in children:
            drop_warm()
            return None
        pid, job_w = warm["pid"], warm["job_w"]
        warm = None
        try:
            with os.fdopen(job_w, "wb") as pipe:
                pipe.write(json.dumps(request).encode())
        except BrokenPipeError:  # it died since it said it was warm: never the job's; a child is forked for it
            unheard_of.add(pid)
            return None
        return pid

    while True:
        listening = {fd: pid for pid, fd in children.items() if fd is not None}
        warming = [warm["warmed_r"]] if warm is not None and warm["warmed_r"] is not None else []
        timeout = None if warm is None else max(0.0, warm["until"] - time.monotonic())
        ready, _, _ = select.select([stdin, wake_r, *listening, *warming], [], [], timeout)
        if warm is not None and time.monotonic() >= warm["until"]:
            drop_warm()  # unused too long: an idle worker holds no GPU context
        for fd in ready:
            if fd in listening:
                hear(listening[fd])
            if warm is not None and fd == warm["warmed_r"]:
                warmed(warm)
        if wake_r in ready:
            os.read(wake_r, 4096)
        while children:  # reap every child that has exited
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            hear(pid)  # a byte written just before the exit is still said first
            unheard = children.pop(pid, None)
            if unheard is not None:  # no byte (it died first); its keeper may still hold the other end
                os.close(unheard)
            if warm is not None and warm["pid"] == pid:  # it died before its job came
                drop_warm()
            if pid in unheard_of:
                unheard_of.discard(pid)
                continue
            send({"pid": pid, "returncode": os.waitstatus_to_exitcode(status)})
        if stdin in ready:
            chunk = os.read(stdin, 65536)
            if not chunk:
                # the worker closed the pipe: stop, without the interpreter's teardown of what we preloaded (1.1 s
                # with the compiler's modules on a 2-core host, for nothing: no file of ours is open, every answer was
                # flushed as it was sent, and a child of ours dies with us: runner.child.process._die_with_parent)
                drop_warm()
                sys.stderr.flush()
                os._exit(0)
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                request = json.loads(line)
                if request.get("drop"):  # another parent's child runs the next job: answered once it is gone
                    drop_warm()
                    send({"dropped": True})
                    continue
                if request.get("warm"):
                    drop_warm()
                    fork(request, warm_first=True)
                    continue
                pid = hand_to_warm(request)
                if pid is None and request.get("warm_ok"):  # none warmed for a CUDA job (a worker's first): one now
                    pid = fork(request, warm_first=True) and hand_to_warm(request)  # as every other's, ahead: false
                send({"pid": pid if pid is not None else fork(request, warm_first=False)})

if __name__ == "__main__":
    sys.exit(main())
