"""Imports go one way: dashboard -> db -> lab, runner -> db -> lab; lab (the lab's meaning) imports no storage, no
Streamlit and no torch; the measuring child imports lab, never db. Checked in fresh interpreters, and by walking
every module's imports."""
import subprocess
import sys

import pytest

from tests.conftest import ROOT

CASES = [
    ("lab", ["torch", "streamlit", "sqlalchemy"]),
    ("db", ["torch", "streamlit"]),
    ("db.queue", ["torch", "streamlit"]),
    ("db.results", ["torch", "streamlit"]),
    ("db.views", ["torch", "streamlit", "pandas"]),
    ("dashboard.data.frame", ["torch", "streamlit", "runner"]),
    ("dashboard.data.store", ["torch", "streamlit", "runner"]),
    ("dashboard.data.series_labels", ["torch", "streamlit", "runner"]),
    ("dashboard.data.filters", ["torch", "streamlit", "runner"]),
    ("dashboard.data.plot_data", ["torch", "streamlit", "runner"]),
    ("dashboard.charts.speed_charts", ["torch", "streamlit", "runner"]),
    ("dashboard.state.embedded", ["torch", "streamlit", "runner"]),
    ("dashboard.data.submission", ["torch", "streamlit", "runner"]),
    ("dashboard.state.resources", ["torch", "runner"]),
    ("runner", ["streamlit", "torch"]),
    ("runner.cli.main", ["streamlit", "torch"]),  # submit/status/export stay light
    ("runner.worker.loop", ["streamlit", "torch"]),  # the worker never holds torch (or a CUDA context)
    ("runner.zoo", ["streamlit", "torch"]),
    ("runner.child.measure", ["streamlit"]),
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


def _imported(path, names: bool = False) -> set[str]:
    """Every module a file names in an import, at the top or inside a function (a lazy import is still a
    dependency); with `names`, also each `from M import x` as M.x (x may be a module)."""
    import ast

    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names} if names else set()
    return out


def _imports(path, package_names) -> set[str]:
    """Every project module a file imports (a lazy import is still a cycle)."""
    return {m for m in _imported(path, names=True) if m in package_names}


def test_no_import_cycles():
    """lab, db, runner and dashboard modules import each other without a cycle (a cycle makes import order
    matter, and a module half-initialised when the other reads it)."""
    modules = {}
    for pkg in ("lab", "db", "runner", "dashboard"):
        for path in (ROOT / pkg).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
            modules[name] = path
    graph = {name: _imports(path, modules) - {name} for name, path in modules.items()}
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(n):] + [n]))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert len(graph) > 40  # the walk saw the packages


def test_the_dashboard_servers_warmup_imports_no_torch_or_runner():
    """dashboard/app.py's warm-up imports every module of dashboard/ into the server before it answers."""
    code = ("import importlib, sys; from dashboard.server import warmup; [importlib.import_module(m) for m in warmup.modules()]; "
            "bad = [m for m in ('torch', 'runner') if m in sys.modules]; print(','.join(bad)); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"imported {done.stdout.strip()} {done.stderr[-500:]}"


def _modules(pkg: str) -> list[str]:
    return sorted(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                  for p in (ROOT / pkg).rglob("*.py"))


def test_the_dashboards_charts_and_data_draw_nothing():
    """dashboard/charts/ and dashboard/data/ take values and return figures and frames: Streamlit is the pages' and
    panels' alone (and state's), so these rooms can be tested and benchmarked without a page."""
    for room in ("charts", "data"):
        for path in (ROOT / "dashboard" / room).rglob("*.py"):
            bad = sorted(m for m in _imported(path) if m.split(".")[0] == "streamlit"
                         or m.startswith(("dashboard.panels", "dashboard.screens", "dashboard.state")))
            assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_the_core_imports_no_storage_streamlit_or_torch():
    """Every module of lab/, imported in one fresh interpreter, brings no SQLAlchemy, Streamlit, pandas or torch,
    nor any module of the floors above it; and no lab/ file names one of them in an import, even inside a function
    (a lazy import is still a dependency)."""
    floors = ("sqlalchemy", "streamlit", "pandas", "torch", "db", "runner", "dashboard")
    code = (f"import importlib, sys; [importlib.import_module(m) for m in {_modules('lab')!r}]; "
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {floors!r}); print(','.join(bad)); "
            "sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"lab/ imported {done.stdout.strip()} {done.stderr[-500:]}"
    for path in (ROOT / "lab").rglob("*.py"):
        bad = sorted(n for n in _imported(path) if n.split(".")[0] in floors)
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


# what a job's child process imports: its entry, the protocol, and what run_job and the child's other modes import
CHILD = ["runner.child.process", "runner.child.measure", "runner.zoo", "runner.child.calibrate", "runner.child.preload",
         "runner.child.lease_deadline", "runner.child.reaper", "lab.spec", "lab.timeline"]


def test_the_measuring_child_imports_no_sqlalchemy():
    """The child measures with torch and writes its result as a file; storing it is the worker's. It imports lab/,
    never db/ (and so no SQLAlchemy in a process that times calls)."""
    code = (f"import importlib, sys; [importlib.import_module(m) for m in {CHILD!r}]; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'db', 'streamlit')); "
            "print(','.join(bad)); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"the child imported {done.stdout.strip()} {done.stderr[-500:]}"


def _makes_job_rows(path) -> list[str]:
    """Where a file makes jobs rows: Job(...), insert(Job) or Job.__table__.insert(), or SQL text inserting into
    jobs (what it says, by line)."""
    import ast
    import re

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f, args = node.func, node.args
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            on_job = lambda e: "Job" in ast.unparse(e).split(".")  # noqa: E731
            if name == "Job" or (name == "insert" and (any(on_job(a) for a in args)
                                                       or isinstance(f, ast.Attribute) and on_job(f.value))):
                found.append(f"line {node.lineno}: {ast.unparse(node)[:60]}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.search(
                r"insert\s+(or\s+\w+\s+)?into\s+\"?jobs\b", node.value, re.I):
            found.append(f"line {node.lineno}: SQL inserting into jobs")
    return found


def test_only_the_admission_gate_makes_job_rows():
    """Every new job passes db.admission's check of the sweep's and the lab's limits in its own transaction: no other
    module of lab/, db/, runner/ or dashboard/ makes a jobs row (a Job, an insert on its table, SQL text)."""
    gate = ROOT / "db" / "admission.py"
    assert _makes_job_rows(gate), "the walk finds the gate's own Job(...)"
    for pkg in ("lab", "db", "runner", "dashboard"):
        for path in (ROOT / pkg).rglob("*.py"):
            if path != gate:
                assert not _makes_job_rows(path), f"{path.relative_to(ROOT)} makes jobs rows: {_makes_job_rows(path)}"
