"""Every help text of `python -m runner` prints (a stray % in one crashed them all), and a --sweep that names no
sweep is said, not answered with an empty table."""
import argparse

import pytest

from db import queue
from db.database import get_engine
from lab.sweep import SweepRequest
from runner.cli import main as cli


def _commands() -> list[str]:
    (sub,) = [a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return list(sub.choices)


@pytest.mark.parametrize("argv", [[]] + [[c] for c in _commands()], ids=lambda a: " ".join(a) or "runner")
def test_every_help_text_prints(argv, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main([*argv, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("usage: python -m runner")


@pytest.mark.parametrize("command", [["report"], ["export", "--format", "csv"]])
def test_a_sweep_that_is_not_there_is_said(db_url, command, capsys):
    sweep_id, _, _ = queue.submit(get_engine(db_url), SweepRequest(model="tiny", batch_sizes=(2,)), None)
    assert cli.main([command[0], "--db", db_url, *command[1:], "--sweep", str(sweep_id), "--sweep", "99"]) == 2
    assert capsys.readouterr().err.strip() == "error: --sweep: no such sweep: 99"
    assert cli.main([command[0], "--db", db_url, *command[1:], "--sweep", str(sweep_id)]) == 0


def test_runner_status_cuts_a_reason_at_a_word_never_inside_one():
    from lab.errors import cut as _cut

    reason = "compile failed: " + "torch._dynamo.exc.Unsupported graph break in user code " * 5
    cut = _cut(reason, 140)
    assert len(cut) <= 140 and cut.endswith(" …") and reason.startswith(cut[:-2])
    assert reason[len(cut) - 2] == " "  # the next character of the reason is a space: no word was split
    assert _cut("short", 140) == "short"
