"""The docs keep up with the code: every `python -m runner` command and long flag is documented, the README
stays a front door (at most 10 KB), and every relative link in the docs opens a file and, with a #fragment,
a heading in it."""
import argparse
import re
from pathlib import Path

import pytest

from runner.cli.main import build_parser
from tests.conftest import ROOT

README = ROOT / "README.md"
DOCS = [README, ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_LIMIT = 10_000  # bytes
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def documented() -> str:
    return "\n".join(p.read_text() for p in [README, *(ROOT / "docs").glob("*.md")])


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_cli_command_and_flag_is_documented(name):
    text = documented()
    assert f"python -m runner {name}" in text, f"`python -m runner {name}` is in no README.md or docs/*.md"
    flags = [o for a in subcommands()[name]._actions for o in a.option_strings if o.startswith("--") and o != "--help"]
    missing = [f for f in flags if f not in text]
    assert not missing, f"`{name}` flags documented nowhere in README.md or docs/*.md: {missing}"


def test_readme_is_a_front_door():
    size = len(README.read_bytes())
    assert size <= README_LIMIT, f"README.md is {size:,} bytes; move detail into docs/ (limit {README_LIMIT:,})"


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # a `# comment` in a code block is no heading
    return {slug(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc):
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target} (no heading #{fragment})")
    assert not broken, f"{doc.relative_to(ROOT)}: {broken}"
