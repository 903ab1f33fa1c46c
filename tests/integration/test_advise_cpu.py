"""`runner advise` end to end on the CPU: the real CLI, worker and child. The worker drives the search (no CLI waits
here: it queues and returns, `work --drain` runs every round, then `advise --sweep` reads what was decided)."""
import re

from sqlalchemy import select

from db import advice, reports
from db.database import get_engine
from db.models import Job
from lab.advise import Outcome
from lab.verdict import paid_range
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
    # after its first process; its second where this box's load scattered the first one's rounds (once in a full
    # suite on 2 cores: scatter widens an interval, and an honest advisor waits for one more process)
    assert when in (1, 2) and why.startswith(("below the leader", "slower than eager")), (when, why)
    aot_jobs = [j for j in jobs_of(db_url, sweep_id) if j.spec["backend"] == "aot_eager"]
    assert len(aot_jobs) == when and aot_jobs[0].follow_up is None  # no process for the dropped one after its drop
    assert st.finished and st.last.leader == best.key
    assert st.last.outcome in (Outcome.RECOMMEND, Outcome.BUDGET, Outcome.DONT_COMPILE)
    if st.last.outcome is Outcome.RECOMMEND:
        assert best.low > 1
    # the break-even range the leader's facts give is its answer's own (lab.verdict.paid_range over the answer row)
    (row,) = [r for r in reports.report(get_engine(db_url), sweep_ids=[sweep_id])
              if r["config"] == best.label or r["speedup"] == best.speedup]
    assert best.break_even_range == paid_range(row)
    if row["break_even_low"] is not None and best.break_even_range:
        assert best.break_even_range in row["verdict"]

    shown = run_cli("advise", "--db", db_url, "--sweep", str(sweep_id))
    assert shown.returncode == 0, shown.stderr
    print(shown.stdout)
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(("use backend=inductor", "don't compile"))
    assert any(line.strip().startswith(f"backend=aot_eager: dropped after round {when};") for line in lines)
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


def test_at_steady_state_the_variants_are_left_out_with_why(db_url, tmp_path):
    # one batch size, no calls: neither backend's dynamic=None variant can beat its base, so only the bases run
    sweep_id = advise(db_url, "--model", "chain", "--batch", "4", "--backend", "inductor", "--backend", "aot_eager",
                      "--mode", "default", "--dynamic", "false", "--dynamic", "none", "--scope", "model")
    assert len(jobs_of(db_url, sweep_id)) == 2  # the first round: the two bases
    work(db_url, tmp_path / "home", "--drain")
    st = advice.load(get_engine(db_url), sweep_id)
    assert st.finished, st.last
    variants = [m for m in st.measured.values() if m.settings["dynamic"] is None]
    assert len(variants) == 2 and not any(m.started for m in variants)
    assert {st.out[m.key] for m in variants} == {"unrun"} and {st.dropped_at(m.key)[0] for m in variants} == {1}
    assert not [j for j in jobs_of(db_url, sweep_id) if j.spec["dynamic"] is None]
    shown = run_cli("advise", "--db", db_url, "--sweep", str(sweep_id)).stdout
    assert "not run: at one batch size and steady state it cannot beat its base setting, backend=aot_eager" in shown


def test_a_race_between_equal_settings_stops_at_the_indifference_zone(db_url, tmp_path):
    # dozer sleeps 6 ms eager and 3 ms compiled whatever the settings: inductor and aot_eager are equal (about 2x)
    sweep_id = advise(db_url, "--model", "dozer", "--batch", "4", "--backend", "inductor", "--backend", "aot_eager",
                      "--mode", "default", "--dynamic", "false", "--scope", "model", "--max-processes", "6")
    work(db_url, tmp_path / "home", "--drain")
    st = advice.load(get_engine(db_url), sweep_id)
    assert st.finished and st.last.outcome is Outcome.RECOMMEND, st.last
    processes = sorted(m.processes for m in st.measured.values())
    print(processes, st.last.why)
    assert processes[-1] < 6, (processes, st.last.why)  # stopped at the indifference zone, not the process limit
    # the two named in either order (the leader first): which one leads is the measurement's to say
    assert re.search(r"backend=(inductor|aot_eager) and backend=(aot_eager|inductor) are equal within 3%",
                     st.last.why) or "cannot be told apart" in st.last.why, st.last.why
    shown = run_cli("advise", "--db", db_url, "--sweep", str(sweep_id)).stdout
    assert shown.startswith("use backend="), shown


def test_few_calls_answer_dont_compile_after_the_first_settings_first_process(db_url, tmp_path):
    sweep_id = advise(db_url, "--model", "chain", "--batch", "4", "--calls", "3")  # every setting that applies
    assert len(jobs_of(db_url, sweep_id)) == 1  # the scout alone
    work(db_url, tmp_path / "home", "--drain")
    st = advice.load(get_engine(db_url), sweep_id)
    assert st.finished and st.last.outcome is Outcome.DONT_COMPILE and len(st.rounds) == 1
    assert len(st.measured) >= 4 and len(jobs_of(db_url, sweep_id)) == 1  # decided after one process
    scout = next(m for m in st.measured.values() if m.started)
    assert scout.settings == {"backend": "inductor", "mode": "default", "dynamic": False, "scope": "model"}
    assert "eager runs the caller's 3 calls in" in st.last.why and "would not pay off" in st.last.why
    assert {st.out[k] for k, m in st.measured.items() if not m.started} == {"unrun"}
