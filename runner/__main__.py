"""`python -m runner` (runner.cli.main), started the way a short command wants (`runner report` has 2 s at 100k jobs).

Importing the CLI makes ~half a million objects that live as long as the process: the cyclic collector is kept off
while they are made and told to leave them be after (gc.freeze); at exit, once the engines' connections are closed,
what is left goes back to the OS without a last collection over all of it. And numpy's OpenBLAS, which starts a
thread per core that spins a while waiting for work, starts one here: the CLI's linear algebra is tiny, and on a
2-core box the spinning thread took a core from the command. The variable is read as the library loads and removed
after, so a worker's children inherit the environment as it was. ~0.3 s of CPU a command on a 2-core box.
"""
import gc
import os
import sys

ONE_BLAS_THREAD = "OPENBLAS_NUM_THREADS" not in os.environ
if ONE_BLAS_THREAD:
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
gc.disable()
from db.database import dispose_engines  # noqa: E402
from runner.cli.main import main  # noqa: E402

if ONE_BLAS_THREAD:
    del os.environ["OPENBLAS_NUM_THREADS"]
gc.freeze()
gc.enable()
try:
    code = main()
finally:
    dispose_engines()  # each connection closed, as the last collection did (SQLite checkpoints its WAL at the last)
gc.freeze()
sys.exit(code)
