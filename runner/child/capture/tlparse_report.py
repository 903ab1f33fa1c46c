"""tlparse's report of a job's compile trace (runner.child.capture.trace), zipped, as the `tlparse` artifact.

tlparse (PyPI `tlparse`, a Rust binary) is what PyTorch asks users to attach to torch.compile bug reports: one
page per compile with its graphs, guards, cache decisions, output code and failures. It runs in the worker once the
job's outcome is stored and its child has exited (runner.worker.reports), never while the job holds its device,
with a time limit, if the worker's environment has it (COMPILE_LAB_TLPARSE names the binary, else `tlparse` on the
PATH or beside the interpreter); without it the job has no report, and its result says why (detail `tlparse_note`,
shown on the job's page; PENDING until the worker has made it). The zip leaves
out what duplicates the trace itself (raw.log, raw.jsonl, payloads/, chromium_events.json): the `trace` artifact
holds that.
"""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ENV = "COMPILE_LAB_TLPARSE"
TIMEOUT_S = 120
SKIP = {"raw.log", "raw.jsonl", "chromium_events.json"}


def executable() -> str | None:
    """COMPILE_LAB_TLPARSE, else `tlparse` on the PATH, else beside this interpreter: `pip install` puts it in the
    virtualenv's bin/, which `make run` and its worker do not put on the PATH."""
    beside = Path(sys.executable).parent / "tlparse"
    return os.environ.get(ENV) or shutil.which("tlparse") or (str(beside) if os.access(beside, os.X_OK) else None)


INSTALL = ("install it in the worker's environment (pip install tlparse) or name it with COMPILE_LAB_TLPARSE, "
           "then run the job again")


PENDING = ("tlparse's report is made by the worker once no job is left for it to run, so that it never holds up a "
           "measurement; none is stored yet (reload the page later; if it stays missing, the worker was stopped first: "
           "a worker started again with the same home makes it)")


def pending() -> str:
    """What a job's result says before its report exists: PENDING where the worker has tlparse, else why not."""
    return PENDING if executable() else f"tlparse was not found on the worker (not on its PATH, nor beside its Python): {INSTALL}"


# at the lowest CPU priority: a neighbouring worker's job may be timing its rounds beside it (also the listing child's)
NICE = ["nice", "-n", "19"] if shutil.which("nice") else []


def report(trace: str, timeout_s: float = TIMEOUT_S) -> tuple[bytes | None, str | None]:
    """The zipped report of `trace` (TORCH_TRACE lines), or None and why there is none, in words for the job page."""
    exe = executable()
    if not exe:
        return None, f"tlparse was not found on the worker (not on its PATH, nor beside its Python): {INSTALL}"
    if not trace:
        return None, "the compile left no trace for tlparse to read"
    if not os.access(exe, os.X_OK):  # said here: run under `nice`, a missing program is nice's exit 127
        return None, f"tlparse could not be run ({exe} is not an executable file): {INSTALL}"
    with tempfile.TemporaryDirectory(prefix="tlparse-") as tmp:
        log, out = Path(tmp) / "trace.log", Path(tmp) / "report"
        log.write_text(trace)
        try:
            done = subprocess.run([*NICE, exe, str(log), "-o", str(out), "--overwrite", "--no-browser"], capture_output=True,
                                  text=True, errors="replace", timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return None, f"tlparse took longer than {timeout_s:g} s and was stopped"
        except OSError as e:
            return None, f"tlparse could not be run ({e}): {INSTALL}"
        if not (out / "index.html").exists():
            said = next((line.strip() for line in reversed(done.stderr.splitlines()) if line.strip()), "")
            return None, f"tlparse made no report (exit code {done.returncode}{': ' + said[:300] if said else ''})"
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for path in sorted(out.rglob("*")):
                rel = path.relative_to(out)
                if path.is_file() and rel.name not in SKIP and rel.parts[0] != "payloads":
                    z.write(path, rel.as_posix())
        return buf.getvalue(), None
