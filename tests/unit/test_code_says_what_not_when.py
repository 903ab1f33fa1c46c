"""The code says what and why, not when: no issue numbers or dates in lab/, db/, runner/ or dashboard/ (they belong in
docs/ and the commit log). The same pattern as `grep -rn "issue [0-9]\\|20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]"`."""
import re

from tests.conftest import ROOT

WHEN = re.compile(r"issue [0-9]|20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]")


def test_no_issue_number_or_date_in_the_code():
    files = [p for folder in ("lab", "db", "runner", "dashboard") for p in (ROOT / folder).rglob("*")
             if p.is_file() and p.suffix in (".py", ".toml", ".md", ".txt", ".sql", ".ini", ".mako")]
    assert len(files) > 100  # the walk saw the code
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()[:80]}" for p in files
             for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if WHEN.search(line)]
    assert not found, found
