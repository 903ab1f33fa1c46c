"""Test fixture: starts a grandchild, notes both pids in the job folder (the child's cwd), then naps in
build until the file named by COMPILE_LAB_TEST_WAKE exists (or `nap` seconds pass), then builds a tiny
model that runs in a moment (submit it with backend eager and few iters). The wake file lets a test
decide when the job may finish, without guessing durations."""
import os
import subprocess
import sys
import time

import torch

DESCRIPTION = "fixture: naps in build (with a grandchild) until woken, then a tiny Linear"
PARAMS = {"nap": 600}


def build(nap):
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open("pids.tmp", "w") as f:
        f.write(f"{os.getpid()} {grandchild.pid}")
    os.replace("pids.tmp", "pids")
    wake = os.environ.get("COMPILE_LAB_TEST_WAKE")
    deadline = time.monotonic() + nap
    while time.monotonic() < deadline and not (wake and os.path.exists(wake)):
        time.sleep(0.05)
    return torch.nn.Linear(4, 4)


def example_inputs(batch_size, nap):
    return (torch.randn(batch_size, 4),)
