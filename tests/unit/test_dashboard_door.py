"""dashboard/data is the dashboard's one door to db/: pages, panels, charts, state and the server read and write
through it, and take what it returns (frames, plain values, dataclasses). Checked by walking every dashboard module's
imports, at the top or inside a function (a lazy import is still a dependency)."""
import ast

from tests.conftest import ROOT

DOOR = ROOT / "dashboard" / "data"


def db_imports(path) -> list[str]:
    """Each import of db (or a module under it) that a file names, as `line N: the import`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(n == "db" or n.startswith("db.") for n in names):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_only_dashboard_data_imports_db():
    outside = {str(p.relative_to(ROOT)): db_imports(p) for p in (ROOT / "dashboard").rglob("*.py")
               if DOOR not in p.parents}
    assert len(outside) > 30  # the walk saw the dashboard
    assert not {p: f for p, f in outside.items() if f}, "outside dashboard/data, only dashboard.data may reach db"


def test_the_walk_sees_an_import_of_db_wherever_it_is(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import db.views\nfrom db import queue\n\ndef f():\n    from db.engine import describe\n"
                      "import dbx\nfrom dashboard.data import jobs\nfrom . import db\n")
    assert db_imports(module) == ["line 1: import db.views", "line 2: from db import queue",
                                  "line 5: from db.engine import describe"]
    assert db_imports(DOOR / "jobs.py")  # the door itself does
