"""Test fixture: starts a grandchild in a session of its own (setsid, as a daemonising helper would),
notes both pids in the job folder, then naps in build until COMPILE_LAB_TEST_WAKE exists (or `nap`
seconds pass). Killing the child's process group does not reach that grandchild."""
import os
import subprocess
import sys
import time

import torch

DESCRIPTION = "fixture: naps in build with a grandchild in another session"
PARAMS = {"nap": 600}


def build(nap):
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
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
