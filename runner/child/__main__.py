"""`python -m runner.child`: one job's child process (runner.child.process)."""
import os
import sys

from runner.child import diskspace
from runner.child.process import main

code = main()
if code == diskspace.EXIT_NO_SPACE:  # flushing the log at exit would fail on the full disk and make the code 120
    os._exit(code)
sys.exit(code)
