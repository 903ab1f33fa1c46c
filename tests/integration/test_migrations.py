"""Schema migrations across processes: workers opening a fresh database at once upgrade it once, and the
`python -m db.migrate` command reports and upgrades."""
import subprocess
import sys
import textwrap

from sqlalchemy import func, select, text

from db import migrate
from db.database import get_engine
from db.engine import reading
from db.models import Job
from tests.conftest import ROOT


def test_workers_opening_a_fresh_database_at_once_upgrade_it_once(any_db_url, tmp_path):
    go = tmp_path / "go"
    code = textwrap.dedent(f'''
        import os, sys, time
        deadline = time.monotonic() + 60
        while not os.path.exists({str(go)!r}) and time.monotonic() < deadline:
            time.sleep(0.01)
        from db.database import get_engine
        from db import migrate
        print(migrate.current(get_engine({any_db_url!r})))
    ''')
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(6)]
    go.touch()  # all six open the empty database together
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, [err[-800:] for _, err in outs]
    assert {out.strip() for out, _ in outs} == {migrate.head()}
    engine = get_engine(any_db_url)
    with reading(engine) as s:
        assert s.scalar(text("SELECT count(*) FROM alembic_version")) == 1
        assert s.scalar(select(func.count()).select_from(Job)) == 0


def test_migrate_cli_reports_and_upgrades(db_url):
    done = subprocess.run([sys.executable, "-m", "db.migrate", "upgrade", "--db", db_url], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"at {migrate.head()}; head is {migrate.head()}" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "db.migrate", "current", "--db", "mysql://x/y"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unsupported database 'mysql'" in bad.stderr
