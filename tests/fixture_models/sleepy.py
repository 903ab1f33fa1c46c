"""Test fixture: starts a grandchild, notes its pid in the job folder (the child's cwd), then sleeps
far past any test timeout. The worker must kill both."""
import os
import subprocess
import sys
import time

import torch

DESCRIPTION = "fixture: sleeps in build with a grandchild process"
PARAMS = {}


def build():
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open("pids.tmp", "w") as f:
        f.write(f"{os.getpid()} {grandchild.pid}")
    os.replace("pids.tmp", "pids")
    time.sleep(600)
    return torch.nn.Identity()


def example_inputs(batch_size):
    return (torch.randn(batch_size, 4),)
