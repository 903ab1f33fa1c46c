"""Bad input at the CLI: exit 2, one clear message naming the flag, nothing stored."""
import pytest
from sqlalchemy import func, select

from db.engine import reading
from db.database import get_engine
from db.models import Job, Sweep
from tests.conftest import run_cli


@pytest.mark.parametrize("args, message", [
    (["--model", "nope", "--batch", "8"], "--model: unknown model 'nope'"),
    (["--model", "simplenet", "--batch", "0"], "--batch: must be a positive integer"),
    (["--model", "simplenet", "--batch", "-2"], "--batch: must be a positive integer"),
    (["--model", "simplenet", "--batch", "8", "--batch", "x"], "--batch: expected an integer"),
    (["--model", "simplenet", "--batch", "8", "--mode", "fast"], "--mode: unknown value 'fast'"),
    (["--model", "simplenet", "--batch", "8", "--dynamic", "maybe"], "--dynamic: unknown value 'maybe'"),
    (["--model", "simplenet", "--batch", "8", "--fullgraph", "yes"], "--fullgraph: expected true or false"),
    (["--model", "simplenet", "--batch", "8", "--device", "gpu"], "--device: unknown value 'gpu'"),
    (["--model", "simplenet", "--batch", "8", "--trace", "sometimes"], "--trace: expected true or false"),
    (["--model", "simplenet", "--batch", "8", "--timeout", "-5"], "--timeout: must be between"),
    (["--model", "simplenet", "--batch", "8", "--schedule", "8,x"], "--schedule: expected an integer"),
    (["--model", "simplenet", "--batch", "8", "--schedule", "8,,16"], "--schedule: an empty entry in '8,,16'"),
    (["--model", "simplenet", "--batch", "8,,16"], "--batch: an empty entry in '8,,16'"),
    (["--model", "localopt", "--batch", "2", "--arg", "scope=layers"], "--arg scope: 'layers' is not one of"),
    (["--model", "localopt", "--batch", "2", "--arg", "depth"], "--arg 'depth': expected NAME=VALUE"),
    (["--model", "sincos", "--batch", "2", "--task", "training"], "--task: model 'sincos' supports inference only"),
    (["--model", "simplenet", "--batch", "8", "--backend", "aot_eager", "--mode", "max-autotune"],
     "--mode: no combination left"),
])
def test_bad_submit_exits_2_and_stores_nothing(db_url, args, message):
    done = run_cli("submit", "--db", db_url, *args)
    assert done.returncode == 2
    assert message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""
    with reading(get_engine(db_url)) as s:
        assert s.scalar(select(func.count(Job.id))) == 0 and s.scalar(select(func.count(Sweep.id))) == 0


def test_unknown_flag_exits_2(db_url):
    done = run_cli("submit", "--db", db_url, "--model", "simplenet", "--batch", "8", "--mdoe", "default")
    assert done.returncode == 2 and "--mdoe" in done.stderr


def test_batch_sizes_may_be_one_list(db_url):
    done = run_cli("submit", "--db", db_url, "--model", "simplenet", "--batch", "8,16", "--batch", "32", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    with reading(get_engine(db_url)) as s:
        assert s.scalar(select(func.count(Job.id))) == 3


def test_good_submit_prints_job_ids(db_url):
    done = run_cli("submit", "--db", db_url, "--model", "simplenet", "--batch", "8", "--batch", "16",
                   "--dynamic", "true", "--dynamic", "false", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    assert [int(x) for x in done.stdout.split()] == [1, 2, 3, 4]


def test_cancel_of_a_missing_job_exits_2(db_url):
    done = run_cli("cancel", "42", "--db", db_url)
    assert done.returncode == 2 and "job 42: no such job" in done.stderr
