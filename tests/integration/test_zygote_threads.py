"""The preloaded parent (runner.child.zygote) forks every job: it must fork as a single-threaded process, or a lock held
by another of its threads at the fork stays held in the job (Python 3.12 warns "This process is multi-threaded,
use of fork() may lead to deadlocks in the child" at each fork). On a GPU host torch's NVML device count left
NVML's thread running; on any host, the count is checked once the parent is ready and again after a job's fork.
The real parent, started as the worker starts it, and a real forked child."""
import json
import os
import subprocess
import sys

from tests.conftest import ROOT


def threads(pid: int) -> list[str]:
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            names.append(f.read().strip())
    return names


def test_the_preloaded_parent_forks_with_one_thread_and_no_warning(tmp_path):
    parent = subprocess.Popen([sys.executable, "-m", "runner.child.zygote"], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert json.loads(parent.stdout.readline()) == {"ready": True}
        ready_threads = threads(parent.pid)
        request = {"argv": ["--help"], "env": dict(os.environ), "cwd": str(tmp_path), "log": str(tmp_path / "log")}
        parent.stdin.write((json.dumps(request) + "\n").encode())
        parent.stdin.flush()
        forked = json.loads(parent.stdout.readline())
        assert json.loads(parent.stdout.readline()) == {"pid": forked["pid"], "returncode": 0}
        after_fork = threads(parent.pid)
    finally:
        parent.stdin.close()
        parent.wait(timeout=60)
    err = parent.stderr.read().decode(errors="replace")
    assert "multi-threaded" not in err, err[-2000:]
    assert len(ready_threads) == 1 and len(after_fork) == 1, (ready_threads, after_fork)
    assert "usage:" in (tmp_path / "log").read_text()  # the forked child ran runner.child.process
