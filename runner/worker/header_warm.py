"""Inductor's precompiled C++ header, built before a worker's first CPU job rather than inside its cold first call.

torch keeps that header outside every compile cache, once per machine, compiler, torch install and flags (under
its default cache dir, `precompiled_headers`: "these headers need to be global, rather than ignored by
fresh_cache"), so a fresh process of a user's script on a machine that has compiled before finds it. A worker's first
CPU inductor job on a new install would build it inside its compiled first call: on this 2-core box a fresh clone's
first job read 10.4 s against 6.1-6.8 s for the jobs after it, and the 156 MB header's file was written in those
4 s. That is not what a fresh process pays, so before a CPU inductor job, where this worker's torch has not warmed it
on this machine (a marker beside the headers), one throwaway process compiles a tiny function on the CPU with a
fresh cache: the header is built there, once, and the job's timeline names it ("compiler header warm-up"). A job whose
flags need another header still builds its own, and the child names that as a cause of its cold first call
(runner.child.disturbance.Headers). No torch here.
"""
from __future__ import annotations

import getpass
import hashlib
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger("compile_lab.worker")

# a pointwise CPU kernel: inductor's C++ codegen, the header included, in a couple of seconds once it is built
PHASE = "compiler header warm-up"  # in the job's timeline: overhead, not its cold first call
SCRIPT = "import torch; torch.compile(lambda x: (x * 2).sin() + 1)(torch.randn(64))"
TIMEOUT_S = 600


def header_dir(env: dict) -> Path:
    """Where torch keeps the headers: its default cache dir (the temp dir of the child's environment, the user's
    name), not the job's TORCHINDUCTOR_CACHE_DIR."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid_{os.getuid()}"
    tmp = env.get("TMPDIR") or tempfile.gettempdir()
    return Path(tmp) / ("torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user)) / "precompiled_headers"


def marker(env: dict, torch_version: str | None) -> Path:
    """The file that says this interpreter's torch warmed its header on this machine."""
    key = hashlib.sha256(f"{sys.executable}\0{torch_version}".encode()).hexdigest()[:16]
    return header_dir(env) / f".compile-lab-warmed-{key}"


def needed(spec, env: dict, torch_version: str | None) -> bool:
    """A CPU inductor job on a machine where this torch has not warmed its header (or the headers were removed)."""
    if spec.device != "cpu" or spec.backend != "inductor":
        return False
    folder = header_dir(env)
    return not (marker(env, torch_version).is_file() and any(folder.glob("*.gch")))


def warm(env: dict, torch_version: str | None, cwd: Path) -> bool:
    """Build the header in a throwaway process (a fresh compile cache of its own); True once warmed. A failure is
    logged and the job goes on: it then builds the header itself, as before."""
    with tempfile.TemporaryDirectory(prefix="compile-lab-header-") as cache:
        run_env = {**env, "TORCHINDUCTOR_CACHE_DIR": os.path.join(cache, "inductor"),
                   "TRITON_CACHE_DIR": os.path.join(cache, "triton")}
        try:
            done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=cwd, env=run_env, capture_output=True,
                                  timeout=TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            log.warning("the compiler header warm-up did not run (%s): the job builds it itself", e)
            return False
    if done.returncode != 0:
        log.warning("the compiler header warm-up failed (exit %s): %s", done.returncode,
                    done.stderr.decode(errors="replace").strip().splitlines()[-1:] or "")
        return False
    try:
        marker(env, torch_version).touch()
    except OSError:
        pass
    return True


def before_child(spec, env: dict, torch_version: str | None, steps, folder: Path) -> None:
    """Before a job's child starts, under its lease: warm the header where needed(), timed as PHASE in the job's
    timeline (`steps`, lab.timeline.Phases), its job setup so far closed first."""
    if not needed(spec, env, torch_version):
        return
    steps.add("job setup", steps.intervals[-1]["end"], time.time())
    with steps.phase(PHASE):
        warm(env, torch_version, folder)


if __name__ == "__main__":  # `make test` warms it once, before its test processes' workers each find it cold
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch_version = __import__("torch").__version__
    if needed(type("CpuInductor", (), {"device": "cpu", "backend": "inductor"}), dict(os.environ), torch_version):
        log.info("compiler header warm-up for torch %s: %s", torch_version,
                 "done" if warm(dict(os.environ), torch_version, Path.cwd()) else "not done")
