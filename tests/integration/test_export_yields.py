"""The dashboard's downloads run `runner export --yield-cpu` (runner.cli.export.Yielding): while other processes keep
the host's cores busy, the export pauses, a bounded while at a time, and still hands out every record in order."""
import os
import subprocess
import sys
import time

from runner.cli.export import Yielding, busy_s

BURN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"


def slow(n: int):
    for i in range(n):  # an export's records take time to read and write: 10 of them here 60 ms
        time.sleep(0.006)
        yield i


def test_the_export_pauses_while_other_processes_keep_the_cores_busy():
    cores = len(os.sched_getaffinity(0))
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(cores)]
    try:
        before = busy_s()
        yielding = Yielding(every=10, pause_s=0.05, max_wait_s=0.3)
        got = list(yielding(slow(50)))  # 5 looks, each finding every core busy: 0.3 s of pauses each
        assert got == list(range(50))
        assert yielding.paused_s >= 5 * 0.3 - 1e-9
        assert busy_s() > before
    finally:
        for p in burners:
            p.kill()
            p.wait()
