"""`runner models | head -1`: a reader that stops early ends the command quietly, with no "Broken pipe" traceback
or message (exit 1, as Python's own recipe for SIGPIPE has it: the output was cut short)."""
import os
import subprocess
import sys

from tests.conftest import ROOT


def test_a_closed_pipe_ends_the_command_quietly():
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes a line
    try:
        done = subprocess.run([sys.executable, "-m", "runner", "models"], cwd=ROOT, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert done.stderr == "", done.stderr
    assert done.returncode == 1
