"""`runner advise` end to end on the CPU: the real CLI, worker and child. The worker drives the search (no CLI waits
here: it queues and returns, `work --drain` runs every round, then `advise --sweep` reads what was decided)."""
from sqlalchemy import select

from db import advice
from db.database import get_engine
from db.models import Job
from lab.advise import Outcome
from tests.conftest import FIXTURE_MODELS, run_cli, work


def advise(db_url: str, *args: str) -> int:
    done = run_cli("advise", "--db", db_url, "--models-dir", str(FIXTURE_MODELS), "--no-wait", "--reruns", "0",
                   "--device", "cpu", "--iters", "10", *args)
    assert done.returncode == 0, done.stderr
    return int(done.stderr.split("search: sweep ")[1].split(",")[0])


def jobs_of(db_url: str, sweep_id: int) -> list:
    from db.engine import reading

    with reading(get_engine(db_url)) as s:
        return s.execute(select(Job.id, Job.spec, Job.status, Job.follow_up).where(Job.sweep_id == sweep_id)).all()


def test_a_clearly_worse_setting_is_dropped_after_its_first_process(db_url, tmp_path):
    # inductor fuses the 24-block chain into one kernel; aot_eager runs every op and its wrappers: clearly slower
    sweep_id = advise(db_url, "--model", "chain", "--batch", "4", "--backend", "inductor", "--backend", "aot_eager",
                      "--mode", "default", "--dynamic", "false", "--scope", "model")
    work(db_url, tmp_path / "home", "--drain")
    st = advice.load(get_engine(db_url), sweep_id)
    by_backend = {m.settings["backend"]: m for m in st.measured.values()}
    worse, best = by_backend["aot_eager"], by_backend["inductor"]
    assert worse.high < best.low, (worse, best)  # what the drop claims holds in the stored answer
    when, why = st.dropped_at(worse.key)
    assert when == 1 and why.startswith(("below the leader", "slower than eager")), why
    aot_jobs = [j for j in jobs_of(db_url, sweep_id) if j.spec["backend"] == "aot_eager"]
    assert len(aot_jobs) == 1 and aot_jobs[0].follow_up is None  # no second process for the dropped one
    assert st.finished and st.last.leader == best.key
    assert st.last.outcome in (Outcome.RECOMMEND, Outcome.BUDGET, Outcome.DONT_COMPILE)
    if st.last.outcome is Outcome.RECOMMEND:
        assert best.low > 1

    shown = run_cli("advise", "--db", db_url, "--sweep", str(sweep_id))
    assert shown.returncode == 0, shown.stderr
    print(shown.stdout)
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(("use backend=inductor", "don't compile"))
    assert any(line.strip().startswith("backend=aot_eager: dropped after round 1;") for line in lines)
    assert "CPU-seconds" in shown.stdout and "the full sweep of these 2 settings" in shown.stdout


def test_few_calls_answer_dont_compile_after_one_process(db_url, tmp_path):
    sweep_id = advise(db_url, "--model", "chain", "--batch", "4", "--backend", "inductor", "--mode", "default",
                      "--dynamic", "false", "--scope", "model", "--calls", "3")
    work(db_url, tmp_path / "home", "--drain")
    st = advice.load(get_engine(db_url), sweep_id)
    assert st.finished and st.last.outcome is Outcome.DONT_COMPILE and len(st.rounds) == 1
    (m,) = st.measured.values()
    assert m.cold_first_s > 0.5 and m.high is not None  # it ran and measured; three calls cannot repay the compile
    assert "3 calls" in st.last.why
    assert len(jobs_of(db_url, sweep_id)) == 1
    shown = run_cli("advise", "--db", db_url, "--sweep", str(sweep_id))
    assert shown.stdout.startswith("don't compile: no setting pays off for the caller in 3 calls")
