"""Imports go one way: dashboard -> db, runner -> db. Checked in fresh interpreters."""
import subprocess
import sys

import pytest

from tests.conftest import ROOT

CASES = [
    ("db", ["torch", "streamlit"]),
    ("db.queue", ["torch", "streamlit"]),
    ("db.results", ["torch", "streamlit"]),
    ("db.views", ["torch", "streamlit", "pandas"]),
    ("dashboard.tables", ["torch", "streamlit", "runner"]),
    ("dashboard.charts", ["torch", "streamlit", "runner"]),
    ("dashboard.embedded", ["torch", "streamlit", "runner"]),
    ("dashboard.submission", ["torch", "streamlit", "runner"]),
    ("dashboard.state", ["torch", "runner"]),
    ("runner", ["streamlit", "torch"]),
    ("runner.cli", ["streamlit", "torch"]),  # submit/status/export stay light
    ("runner.worker", ["streamlit", "torch"]),  # the worker never holds torch (or a CUDA context)
    ("runner.zoo", ["streamlit", "torch"]),
    ("runner.measure", ["streamlit"]),
]


@pytest.mark.parametrize("module, forbidden", CASES)
def test_import_boundaries(module, forbidden):
    code = (f"import sys, {module}; bad = [m for m in {forbidden!r} if m in sys.modules]; "
            "print(','.join(bad)); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{module} imported {done.stdout.strip()} {done.stderr[-500:]}"


def test_dashboard_does_not_import_torch_or_runner():
    for path in (ROOT / "dashboard").rglob("*.py"):
        text = path.read_text()
        for bad in ("import torch", "from torch", "import runner", "from runner"):
            assert bad not in text, f"{path} contains {bad!r}"
