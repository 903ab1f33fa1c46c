"""Follow-ups (lab.noise): every configuration runs in several processes, queued with its first run's result in the
transaction that stores it; a run a measured cause disturbed is re-run up to the sweep's budget and left out of the
answer; a sweep never grows past its job limit; the follow-up is linked and says why. Real SQLite (and PostgreSQL
where it is set up), real queue operations."""
import numpy as np
import pytest
from sqlalchemy import select

from db import follow_ups, queue, views
from db.database import get_engine
from db.engine import reading
from db.models import Job, JobStatus
from db.reports import report, spreads
from lab.checks import SpecError
from lab.interval import combine
from lab.spec import ModelInfo
from lab.sweep import SweepRequest, follow_up_settings
from tests.conftest import at_head

CATALOG = {"simplenet": ModelInfo("simplenet", "d")}
QUIET = {"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "round_speedup": 2.0, "round_speedup_se": 0.01,
         "disturbed": False, "noisy": False, "samples": {"eager": [[2.0]] * 10, "compiled": [[1.0]] * 10},
         "detail": {}, "eager_first_call_s": 0.01, "compiled_first_call_s": 1.0}
CAUSE = "other processes used 1.6 of the job's 2 cores during the rounds (python (pid 7) 1.0)"
DISTURBED = {**QUIET, "disturbed": True, "noisy": True, "noise_note": CAUSE}
SCATTERED = {**QUIET, "speedup_spread": 0.3, "round_speedup_se": 0.08}  # scatter alone: not a cause


@pytest.fixture
def engine(any_db_url, migrated_sqlite):
    return get_engine(at_head(any_db_url, migrated_sqlite))


def run_next(engine, result: dict) -> int:
    """Claim the oldest queued job and finish it succeeded with `result`; returns its id."""
    claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
    assert queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result=result)
    return claim.job_id


def jobs(engine) -> dict[int, Job]:
    with reading(engine) as s:
        return {j.id: j for j in s.scalars(select(Job).order_by(Job.id)).all()}


def test_a_configuration_runs_in_several_processes_and_they_answer_together(engine):
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=3), CATALOG)
    first = run_next(engine, QUIET)
    repeats = [j for j in jobs(engine).values() if j.status == "queued"]
    assert [(j.follow_up_of, j.follow_up["kind"], j.follow_up["n"], j.follow_up["total"]) for j in repeats] == [
        (first, "process", 1, 2), (first, "process", 2, 2)]
    assert repeats[0].config == jobs(engine)[first].config and repeats[0].spec == jobs(engine)[first].spec
    assert "fresh processes" in views.job_rows(engine)[0]["follow_up"]
    (row,) = report(engine)
    assert row["runs"] == 1 and ("one process" in row["verdict"] or "anywhere from" in row["verdict"])
    run_next(engine, SCATTERED)  # its rounds scatter: it answers, nothing more is queued
    assert len(jobs(engine)) == 3
    last = run_next(engine, {**QUIET, "round_speedup": 2.4})
    # the three disagree by 20%: one more process, once, saying why
    (extra,) = [j for j in jobs(engine).values() if j.status == "queued"]
    assert (extra.follow_up_of, extra.follow_up["kind"], extra.follow_up["n"]) == (last, "process", 3)
    assert "its 3 processes disagree by 20%" in extra.follow_up["because"]
    # the words number each repeat without a total: the extra one would otherwise read "3 of 3" after "1 of 2"
    said = {r["job_id"]: (r["follow_up"], r["follow_up_short"]) for r in views.job_rows(engine)}
    assert said[repeats[0].id][0].startswith(f"process repeat 1 of job {first}, because: ")
    assert said[extra.id] == (f"process repeat 3 of job {last}, because: {extra.follow_up['because']}",
                              f"repeat 3 of #{last}")
    run_next(engine, QUIET)
    assert len(jobs(engine)) == 4
    (row,) = report(engine)
    assert (row["runs"], row["noisy_runs"]) == (4, 0) and "4 processes" in row["verdict"]
    assert row["speedup_ci_low"] <= 2.0 and row["speedup_ci_high"] >= 2.4 ** 0.25 * 2 ** 0.75  # spans the processes


@pytest.mark.parametrize("second, extra", [(2.08, 0), (2.12, 1)], ids=["4% apart: agree", "6% apart: one more"])
def test_one_more_process_only_when_the_processes_disagree(engine, second, extra):
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=2), CATALOG)
    run_next(engine, QUIET)
    run_next(engine, {**QUIET, "round_speedup": second})
    assert len(jobs(engine)) == 2 + extra
    if extra:  # the extra one agrees or not, it is the last
        run_next(engine, {**QUIET, "round_speedup": 3.0})
        assert len(jobs(engine)) == 3


def test_a_disturbed_extra_process_is_re_run_while_the_processes_still_disagree(engine):
    """The extra process is there to settle a disagreement: disturbed, it leaves it standing, so it is re-run
    (within the budget); once an undisturbed one ends, nothing more."""
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", reruns=2, process_repeats=2),
                 CATALOG)
    run_next(engine, QUIET)
    run_next(engine, {**QUIET, "round_speedup": 2.4})  # 20% apart: one more process
    extra = run_next(engine, DISTURBED)
    (rerun,) = [j for j in jobs(engine).values() if j.status == "queued"]
    assert (rerun.follow_up_of, rerun.follow_up["kind"], rerun.follow_up["because"]) == (extra, "noisy", CAUSE)
    run_next(engine, {**QUIET, "round_speedup": 2.1})
    assert len(jobs(engine)) == 4 and all(j.status == "succeeded" for j in jobs(engine).values())
    (row,) = report(engine)
    assert (row["runs"], row["noisy_runs"]) == (3, 1) and "3 processes" in row["verdict"]  # the disturbed one left out


def test_a_disturbed_result_queues_its_rerun_with_it_up_to_the_budget(engine):
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", reruns=2, process_repeats=1),
                 CATALOG)
    first = run_next(engine, DISTURBED)
    (rerun,) = [j for j in jobs(engine).values() if j.status == "queued"]
    assert rerun.follow_up_of == first and rerun.spec == jobs(engine)[first].spec
    assert rerun.follow_up == {"kind": "noisy", "n": 1, "total": 2, "because": CAUSE}
    assert views.job_rows(engine)[0]["follow_up"] == f"re-run 1 of 2 of job {first}, because: {CAUSE}"
    second = run_next(engine, DISTURBED)
    assert jobs(engine)[second + 1].follow_up["n"] == 2  # the last of the budget
    run_next(engine, DISTURBED)
    assert len(jobs(engine)) == 3 and all(j.status == "succeeded" for j in jobs(engine).values())  # budget spent
    (row,) = report(engine)  # every run disturbed: their numbers, flagged, with the cause
    assert row["noisy"] is True and row["speedup"] is not None and CAUSE in row["verdict"]
    detail = views.job_detail(engine, first)
    assert [(i, status) for i, status, _ in detail["follow_ups"]] == [(first + 1, "succeeded")]


def test_a_disturbed_first_run_gets_a_rerun_and_the_repeats_and_is_left_out(engine):
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=3), CATALOG)
    run_next(engine, DISTURBED)
    kinds = sorted(j.follow_up["kind"] for j in jobs(engine).values() if j.follow_up)
    assert kinds == ["noisy", "process", "process"]  # three undisturbed processes will exist
    for _ in range(3):
        run_next(engine, QUIET)
    assert len(jobs(engine)) == 4
    (row,) = report(engine)
    assert (row["runs"], row["noisy_runs"], row["noisy"]) == (3, 1, False)
    assert "1 disturbed run left out" in row["verdict"]


def test_scatter_alone_calls_for_nothing_but_the_processes(engine):
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=1), CATALOG)
    run_next(engine, SCATTERED)
    assert len(jobs(engine)) == 1


def test_no_result_no_follow_up_a_stale_finish_writes_neither(engine):
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu"), CATALOG)
    claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
    queue.cancel(engine, claim.job_id)
    assert not queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result=DISTURBED)
    assert len(jobs(engine)) == 1


def test_reruns_zero_and_process_repeats_one_turn_them_off(engine):
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", reruns=0, process_repeats=1),
                 CATALOG)
    run_next(engine, DISTURBED)
    assert len(jobs(engine)) == 1


def test_follow_ups_count_against_the_sweeps_job_limit(engine, monkeypatch):
    """A sweep never grows past lab.sweep.MAX_JOBS with its follow-ups; at submit the processes count too."""
    from lab import sweep

    monkeypatch.setattr(sweep, "MAX_JOBS", 12)
    with pytest.raises(SpecError, match="15 jobs \\(5 configurations x 3 processes\\)"):
        SweepRequest(model="simplenet", batch_sizes=[1, 2, 3, 4, 5], device="cpu", process_repeats=3).expand(CATALOG)
    monkeypatch.setattr(sweep, "MAX_JOBS", 4)
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[1, 2], device="cpu", reruns=5,
                                      process_repeats=1), CATALOG)
    for _ in range(6):
        if not any(j.status == "queued" for j in jobs(engine).values()):
            break
        run_next(engine, DISTURBED)
    assert len(jobs(engine)) == 4  # two first runs and two re-runs, then the limit


def test_sweep_settings_are_checked_and_old_sweeps_read_the_defaults():
    with pytest.raises(SpecError, match="reruns"):
        SweepRequest(model="m", batch_sizes=[1], reruns=-1)
    with pytest.raises(SpecError, match="process_repeats"):
        SweepRequest(model="m", batch_sizes=[1], process_repeats=0)
    assert follow_up_settings({"model": "m"}) == (SweepRequest.reruns, SweepRequest.process_repeats)
    assert follow_up_settings({"reruns": 0, "process_repeats": 1}) == (0, 1)
    assert follow_up_settings("corrupt") == (2, 2)
    (default,) = [j for j in SweepRequest(model="simplenet", batch_sizes=[8]).expand(CATALOG)[0]]
    assert SweepRequest.process_repeats == 2  # from the H100 data: a repeat costs 0.32x of a first run


def test_the_host_s_other_workers_sharing_cores_and_busy_are_named(engine):
    from lab.noise import cpus_text
    from runner.worker.neighbours import Watch, sharing

    caps = {"devices": ["cpu"], "models": []}
    queue.register_worker(engine, "me", "box", 1, None, {**caps, "cpus": [0, 1]})
    queue.register_worker(engine, "same-cores", "box", 2, None, {**caps, "cpus": [1, 2]})
    queue.register_worker(engine, "other-cores", "box", 3, None, {**caps, "cpus": [3]})
    queue.register_worker(engine, "old", "box", 4, None, caps)  # published no CPUs: taken to use them all
    queue.register_worker(engine, "elsewhere", "other-box", 5, None, {**caps, "cpus": [0, 1]})
    assert sharing("me", [0, 1], [w for w in queue.live_workers(engine) if w.hostname == "box"]) == [
        "old", "same-cores"]
    watch = Watch(engine, "me", "box", [0, 1])
    watch.sample(force=True)
    assert watch.note() is None and watch.state()["busy_workers"] == []  # nobody busy yet
    queue.heartbeat_worker(engine, "same-cores", "busy", 41)
    queue.heartbeat_worker(engine, "other-cores", "busy", 42)
    queue.heartbeat_worker(engine, "elsewhere", "busy", 43)
    watch.sample()  # within every_s of the last look: skipped
    assert watch.state()["busy_workers"] == []
    watch.sample(force=True)
    state = watch.state()
    assert state["worker_cpus"] == cpus_text([0, 1]) == "0-1" and state["shares_cores_with"] == ["old", "same-cores"]
    assert state["busy_workers"] == [{"worker": "other-cores", "job": 42, "shares_cores": False},
                                     {"worker": "same-cores", "job": 41, "shares_cores": True}]
    assert watch.note() == ("2 other workers on this host were busy while it ran, 1 of them on the same cores "
                            "(same-cores)")
    assert cpus_text([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"


def test_a_disturbed_result_names_the_busy_workers_and_the_threads(db_url, tmp_path):
    from lab.record import ResultRecord
    from runner.worker.config import WorkerConfig
    from runner.worker.loop import Worker
    from runner.worker.neighbours import Watch, with_neighbours

    w = Worker(WorkerConfig(db_url=db_url, home=tmp_path, spawn="fresh", calibrate=False, threads=1))
    assert w._env()["COMPILE_LAB_THREADS"] == "1"
    watch = Watch(w.engine, w.id, w.hostname, w.cpus)
    watch.busy = {"other": {"job": 7, "shares_cores": True}}
    watch.shares = {"other"}
    noisy = ResultRecord.from_dict({**DISTURBED, "detail": {"host_state": {"before_rounds": {"loadavg": [3.0, 2.0,
                                                                                                     1.0]}}}})
    quiet = ResultRecord.from_dict({**QUIET, "detail": {}})
    for record in (noisy, quiet):
        with_neighbours(record, watch, w.threads)
    assert noisy.noise_note == (f"{CAUSE}; 1 other worker on this host was busy while it ran, "
                                "1 of them on the same cores (other)")
    assert quiet.noise_note is None  # quiet: nothing to explain
    state = noisy.detail["host_state"]
    assert state["before_rounds"]["loadavg"] == [3.0, 2.0, 1.0] and state["threads_pinned"] == 1
    assert state["shares_cores_with"] == ["other"] and state["busy_workers"][0]["job"] == 7


def test_a_configuration_in_one_process_takes_the_spread_its_device_showed_elsewhere_in_the_database(engine):
    """The answer for one sweep's lone process is widened by what the device's other sweeps' repeated
    configurations showed (db.reports.spreads), not only by the jobs asked for."""
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=3), CATALOG)
    for center in (2.0, 2.3, 1.75, 2.1):  # three processes that disagree by some 14%, and the one more they called for
        run_next(engine, {**QUIET, "round_speedup": center, "device_name": "box"})
    sweep, (lone,), _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[16], device="cpu",
                                                          process_repeats=1), CATALOG)
    run_next(engine, {**QUIET, "round_speedup": 1.5, "round_speedup_se": 0.001, "device_name": "box"})
    (alone,) = report(engine, job_ids=[lone])
    assert alone["speedup_ci_high"] / alone["speedup"] - 1 > 0.15  # the device's spread, not its rounds' 0.1%
    assert "this device's spread between fresh processes" in alone["verdict"]


def test_a_sweep_whose_processes_agree_takes_the_spread_its_configuration_showed_in_other_sweeps(engine):
    """Two processes that happen to agree do not make a configuration known to 0.5%: where the database holds more
    of its processes on this device (an earlier sweep of it), all of them judge its spread. The answer's number is
    still the sweep's own; the device's other configurations, quiet, do not narrow it."""
    def sweep(centers: dict[int, list[float]]) -> int:
        submitted, _, _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=sorted(centers),
                                                            device="cpu"), CATALOG)
        while claim := queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60):
            center = centers[jobs(engine)[claim.job_id].spec["batch_size"]].pop(0)
            assert queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
                **QUIET, "round_speedup": center, "round_speedup_se": 0.001, "device_name": "box"})
        return submitted

    # bs 8's processes 25% apart (and the one more they called for); the device's other configurations quiet
    quiet = {16: [1.0, 1.01], 32: [1.2, 1.205], 64: [0.9, 0.902]}
    sweep({8: [1.6, 2.0, 1.8], **{bs: list(c) for bs, c in quiet.items()}})
    second = sweep({8: [2.0, 2.01], **{bs: list(c) for bs, c in quiet.items()}})
    own = {r["batch_size"]: r for r in report(engine, sweep_ids=[second])}[8]
    assert own["runs"] == 2 and own["speedup"] == pytest.approx((2.0 * 2.01) ** 0.5)
    assert "its 5 processes on this device, over every sweep of it, spread" in own["verdict"]
    # the same two processes judged by themselves and the device's prior alone: far tighter
    alone = combine([2.0, 2.01], [0.001, 0.001], spreads(engine).devices["box"])
    assert own["speedup_ci_high"] / own["speedup"] - 1 > 1.4 * (alone.high / alone.speedup - 1)
    whole = {r["batch_size"]: r for r in report(engine)}[8]  # every sweep answered together: all five processes
    assert whole["runs"] == 5 and "over every sweep" not in whole["verdict"]


def test_a_finished_run_finds_its_configurations_runs_through_the_sweep_config_index(tmp_path):
    """The follow-up planning reads the other runs of one configuration by (sweep, config), never the whole sweep:
    SQLite's plan for that query searches the index."""
    from sqlalchemy import text

    from db.engine import reading

    engine = get_engine(f"sqlite:///{tmp_path / 'lab.db'}")
    sql = str(follow_ups.same_configuration(1, "k").compile(engine, compile_kwargs={"literal_binds": True}))
    with reading(engine) as s:
        plan = " ".join(str(row[-1]) for row in s.execute(text("EXPLAIN QUERY PLAN " + sql)))
    assert "USING INDEX ix_jobs_sweep_config" in plan, plan


def test_host_state_says_which_cpu_and_numa_node_the_timing_thread_ran_on():
    """Two processes of one configuration can land on different cores or NUMA nodes; each run records where its
    timing thread was, so an outlying process can be told apart by it."""
    import os

    from runner.child.environment import host_state

    state, allowed = host_state(), os.sched_getaffinity(0)
    assert state["cpu"] in allowed
    assert state["cpu_node"] is None or state["cpu_node"] >= 0
    os.sched_setaffinity(0, {max(allowed)})  # pinned: it must say that very CPU
    try:
        assert host_state()["cpu"] == max(allowed)
    finally:
        os.sched_setaffinity(0, allowed)


def test_quiet_earlier_sweeps_never_narrow_a_sweep_whose_own_processes_disagree():
    """The configuration's other processes widen a sweep's interval, never narrow it below what its own processes
    show: eight quiet processes elsewhere (another host of the same GPU, say) must not turn two that disagree by 25%
    into "faster"."""
    import numpy as np

    from lab.interval import Prior, Spread, combine, config_spreads

    prior = Prior(tau2=0.02 ** 2, df=4, measured_df=8)
    own = combine([1.0, 1.25], [0.001, 0.001], prior)
    earlier = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01]
    (spread,) = config_spreads(np.zeros(10, dtype=np.intp), np.array(earlier + [1.0, 1.25])).values()
    assert spread == Spread(10, spread.var, spread.mean) and spread.var < np.var(np.log([1.0, 1.25]), ddof=1)
    judged = combine([1.0, 1.25], [0.001, 0.001], prior, spread)
    assert judged.high / judged.low >= own.high / own.low * 0.9  # more degrees of freedom, not a narrower spread
    assert judged.low <= 1.0 <= judged.high  # still not separable from eager


@pytest.mark.parametrize("process_repeats", [2, 3])
def test_a_disturbed_extra_process_draws_on_the_rerun_budget_and_stops_with_it(process_repeats):
    """The extra process's re-runs come out of the sweep's re-run budget: a chain of disturbed ones stops at it, and
    with the budget spent a disturbed extra queues nothing. A sweep of one process per configuration has no extra."""
    from lab import noise

    def run(center, kind=None, disturbed=False):
        return noise.Run("succeeded", kind, disturbed, center)

    originals = [run(2.0)] + [run(2.0 + 0.4 * (i == process_repeats - 2), noise.PROCESS_REPEAT)
                              for i in range(process_repeats - 1)]  # the last 20% off the others
    extra = run(2.1, noise.PROCESS_REPEAT, disturbed=True)
    plan = noise.plan_follow_ups(True, CAUSE, 2, process_repeats, originals + [extra], room=10)
    assert [(f.kind, f.n) for f in plan] == [(noise.NOISY_RERUN, 1)]
    again = run(2.1, noise.NOISY_RERUN, disturbed=True)
    plan = noise.plan_follow_ups(True, CAUSE, 2, process_repeats, originals + [extra, again], room=10)
    assert [(f.kind, f.n) for f in plan] == [(noise.NOISY_RERUN, 2)]
    last = run(2.1, noise.NOISY_RERUN, disturbed=True)
    assert noise.plan_follow_ups(True, CAUSE, 2, process_repeats, originals + [extra, again, last], room=10) == []
    assert noise.plan_follow_ups(True, CAUSE, 0, process_repeats, originals + [extra], room=10) == []  # no budget
    agree = [run(2.0)] + [run(2.0, noise.PROCESS_REPEAT) for _ in range(process_repeats - 1)]
    assert noise.plan_follow_ups(True, CAUSE, 2, process_repeats, agree + [extra], room=10) == []  # nothing to settle


def test_one_process_per_configuration_never_calls_for_an_extra_one():
    from lab import noise

    one = noise.Run("succeeded", noise.NOISY_RERUN, disturbed=True, center=2.0)
    first = noise.Run("succeeded", None, disturbed=False, center=3.0)
    assert noise.plan_follow_ups(True, CAUSE, 2, 1, [first, one], room=10) == []


def test_which_runs_count_is_one_rule_per_configuration():
    """lab.noise.counting: the undisturbed runs of a configuration count; a configuration whose every run was
    disturbed counts them all (flagged elsewhere), so it still answers."""
    from lab import noise

    disturbed = [False, True, True, True, False]
    groups = ["a", "a", "b", "b", "c"]
    assert noise.counting(disturbed, groups) == [True, False, True, True, True]
    assert noise.counting([], []) == []
    assert [noise.answering(d) for d in ([False, True], [True, True])] == [[True, False], [True, True]]


def test_a_configurations_history_is_its_own_spec_device_kind_and_torch_only(engine):
    """db.follow_ups.past_processes reads one configuration's earlier processes: the same spec on the same device
    kind under the same torch, succeeded and undisturbed, in other sweeps, newest first; never another batch size,
    device, torch, a disturbed run or the sweep's own runs."""
    def one(bs: int, center: float, device="H200", torch="2.11.0", disturbed=False) -> int:
        submitted, _, _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[bs], device="cpu",
                                                            process_repeats=1, reruns=0), CATALOG)
        run_next(engine, {**QUIET, "round_speedup": center, "device_name": device, "torch_version": torch,
                          "disturbed": disturbed})
        return submitted

    first = one(8, 1.40)
    one(16, 1.90)  # another batch size: another configuration
    one(8, 1.50, device="H100")
    one(8, 1.55, torch="2.12.0")
    one(8, 1.70, disturbed=True)
    last = one(8, 1.60)
    config = next(j.config for j in jobs(engine).values() if j.sweep_id == first)
    with reading(engine) as s:
        def past(sweep_id: int, limit: int = 64) -> list[float]:
            return list(s.scalars(follow_ups.past_processes(sweep_id, config, "H200", "2.11.0", limit)))

        assert past(last + 1) == [1.60, 1.40]
        assert past(last) == [1.40]  # the sweep's own runs are today's, not its history
        assert past(last + 1, limit=1) == [1.60]
        assert list(s.scalars(follow_ups.past_processes(last + 1, config, "H100", "2.11.0"))) == [1.50]


AGREED6 = [1.50, 1.51, 1.50, 1.49, 1.50, 1.51]


def history_then_first(engine, earlier: list[float], today: float) -> tuple[int, list]:
    """Sweeps of one process each (they call for no follow-up) at `earlier`, then a sweep of 2 processes whose first
    reads `today`: its job id and the follow-ups queued."""
    result = {**QUIET, "device_name": "H200", "torch_version": "2.11.0"}
    for center in earlier:
        queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=1), CATALOG)
        run_next(engine, {**result, "round_speedup": center})
    assert not [j for j in jobs(engine).values() if j.status == "queued"]
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=2), CATALOG)
    first = run_next(engine, {**result, "round_speedup": today})
    return first, [j for j in jobs(engine).values() if j.status == "queued"]


@pytest.mark.parametrize("earlier, planned", [([1.40, 1.60, 1.40, 1.60], 6), ([1.50, 1.51, 1.50, 1.49], 2),
                                              (AGREED6, 1)],
                         ids=["history disagreed: 6", "4 agreed: 2", "6 agreed: 1"])
def test_a_configuration_whose_earlier_processes_disagreed_runs_in_more_processes(engine, earlier, planned):
    """Earlier sweeps of the configuration on this device kind and torch plan today's processes: two modes 14% apart
    call for 6 (the most: 4 beyond the sweep's own 2), saying why; 4 that agreed leave it at the sweep's 2; 6 that
    agreed within 1% plan one (its answer rests on them)."""
    first, repeats = history_then_first(engine, earlier, 1.5)
    assert len(repeats) == planned - 1 and all(j.follow_up_of == first for j in repeats)
    if planned > 2:
        assert "this one in 6: its 4 earlier processes on this device spread 8%" in repeats[0].follow_up["because"]
    elif planned == 2:
        assert "each configuration runs in 2 fresh processes" in repeats[0].follow_up["because"]


def test_a_first_process_off_its_agreeing_history_runs_more_than_the_sweeps_own_count(engine):
    """6 earlier processes agreed at 1.50x, so one was planned; today's reads 1.70x, which their spread does not
    explain: the spread of all 7 plans more than the sweep's 2, and the repeats say why."""
    first, repeats = history_then_first(engine, AGREED6, 1.70)
    assert len(repeats) >= 2 and all(j.follow_up_of == first for j in repeats)
    because = repeats[0].follow_up["because"]
    assert "its 1 process read 13% off what its 6 earlier processes on this device did" in because
    assert f"{len(repeats) + 1} run, as the spread of all of them asks" in because


def test_a_configurations_history_is_read_through_the_config_index(tmp_path):
    """The history read is bounded and indexed: SQLite's plan searches (config, id), newest first, no sort."""
    from sqlalchemy import text

    engine = get_engine(f"sqlite:///{tmp_path / 'lab.db'}")
    sql = str(follow_ups.past_processes(1, "k", "H200", "2.11.0").compile(engine,
                                                                           compile_kwargs={"literal_binds": True}))
    with reading(engine) as s:
        plan = " ".join(str(row[-1]) for row in s.execute(text("EXPLAIN QUERY PLAN " + sql)))
    assert "USING INDEX ix_jobs_config_id" in plan and "TEMP B-TREE" not in plan, plan


def test_the_answer_read_from_the_database_names_the_host_paces_its_processes_ran_at(engine):
    """Each run's median pace is a results column (migration 0021), read with the answer's, on SQLite and PostgreSQL:
    the answer of processes at different paces says what each pace's read; a run stored without one says nothing."""
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=2), CATALOG)
    run_next(engine, {**QUIET, "round_speedup": 2.0, "host_pace_us": 21.5})
    run_next(engine, {**QUIET, "round_speedup": 1.6, "host_pace_us": 40.0})
    (row,) = report(engine)
    assert ("its processes ran at different host paces (a fixed piece of Python before each round took 22-40 us, lower "
            "is faster): the one at 22 us read 2.00x, the one at 40 us 1.60x") in row["verdict"]
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[16], device="cpu", process_repeats=2), CATALOG)
    run_next(engine, {**QUIET, "host_pace_us": None})
    run_next(engine, QUIET)
    assert "host paces" not in report(engine)[0 if report(engine)[0]["batch_size"] == 16 else 1]["verdict"]


def test_an_answer_whose_processes_all_ran_slower_than_its_device_runs_when_fast_says_so(engine):
    """The device's fast pace is read from every paced process on it (lab.spreads.device_paces), the same by SQL over
    the database and over the runs in hand; an answer whose processes all ran 1.3x slower or more says so, one whose
    processes ran at it does not."""
    from db.reports import answer_columns
    from lab.answer import Runs

    gpu = {**QUIET, "device_name": "gpu0"}
    for batch, paces in ((8, (21.0, 22.0, 21.5)), (16, (40.0, 23.0, 21.2))):
        queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[batch], device="cpu", process_repeats=3),
                     CATALOG)
        for pace in paces:
            run_next(engine, {**gpu, "host_pace_us": pace})
    slow_sweep, _, _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[32], device="cpu",
                                                         process_repeats=2), CATALOG)
    run_next(engine, {**gpu, "round_speedup": 1.6, "host_pace_us": 40.0})
    run_next(engine, {**gpu, "round_speedup": 1.62, "host_pace_us": 43.0})
    stored = spreads(engine)
    fast = stored.paces["gpu0"]
    assert fast == pytest.approx(float(np.percentile([21.0, 22.0, 21.5, 40.0, 23.0, 21.2, 40.0, 43.0], 10)))
    in_hand, keys = answer_columns(engine)
    assert Runs(in_hand, keys).spreads().paces == stored.paces  # the two readers of one database
    for rows in (report(engine), report(engine, sweep_ids=[slow_sweep])):  # Runs' spreads, then SQL's
        by_batch = {r["batch_size"]: r["verdict"] for r in rows}
        assert (f"its processes all ran slower than this device's host runs when it runs fast (a fixed piece of Python "
                f"took 40-43 us against {fast:.0f} us in its fastest tenth of processes)") in by_batch[32]
        assert "all ran slower" not in by_batch.get(8, "") and "all ran slower" not in by_batch.get(16, "")


def test_an_answer_that_ran_slow_says_what_its_configuration_read_when_the_host_ran_fast(engine):
    """Where a sweep's processes all ran slower than their device's fast pace and earlier sweeps of the same
    configuration ran at it, the answer gives what those read (lab.spreads.at_fast_pace), the same by SQL over the
    database and over the runs in hand; a configuration with no process at that pace says nothing of it."""
    from db.reports import answer_columns
    from lab.answer import Runs

    gpu = {**QUIET, "device_name": "gpu0"}
    for batch, runs in ((32, ((2.0, 21.0), (2.02, 22.0), (1.98, 21.5))), (8, ((1.5, 40.0), (1.5, 41.0), (1.5, 42.0)))):
        queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[batch], device="cpu", process_repeats=3),
                     CATALOG)
        for speedup, pace in runs:
            run_next(engine, {**gpu, "round_speedup": speedup, "host_pace_us": pace})
    slow = []
    for batch in (32, 8):
        sweep, _, _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[batch], device="cpu",
                                                        process_repeats=2), CATALOG)
        slow.append(sweep)
        run_next(engine, {**gpu, "round_speedup": 1.6, "host_pace_us": 40.0})
        run_next(engine, {**gpu, "round_speedup": 1.62, "host_pace_us": 43.0})
    stored = spreads(engine)
    in_hand, keys = answer_columns(engine)
    assert Runs(in_hand, keys).spreads().fast == stored.fast and len(stored.fast) == 1  # bs 32's three at 21-22 us
    (fast,) = stored.fast.values()
    assert fast.processes == 3 and np.exp(fast.mean) == pytest.approx((2.0 * 2.02 * 1.98) ** (1 / 3))
    by_batch = {r["batch_size"]: r["verdict"] for r in report(engine, sweep_ids=slow)}
    assert "all ran slower" in by_batch[32]
    assert "its 3 processes at that pace, over every sweep of it, read 2.00x: a process at that pace reads" in by_batch[32]
    assert "all ran slower" in by_batch[8] and "at that pace" not in by_batch[8]  # none of bs 8's ran fast


def test_processes_that_disagree_at_different_host_paces_say_so_when_they_call_for_one_more(engine):
    """The extra process's reason names the host paces its configuration's processes ran at, where they lie 1.3x apart
    (lab.host_pace), read with the runs through the (sweep, config) index; processes at one pace are not said to."""
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=2), CATALOG)
    run_next(engine, {**QUIET, "round_speedup": 2.0, "host_pace_us": 21.4})
    run_next(engine, {**QUIET, "round_speedup": 1.6, "host_pace_us": 40.2})
    (extra,) = [j for j in jobs(engine).values() if j.status == "queued"]
    assert ("its 2 processes disagree by 25%, more than the 5% fresh processes usually differ by (they ran at host "
            "paces of 21-40 us, lower is faster): one more process") in extra.follow_up["because"]
    run_next(engine, {**QUIET, "round_speedup": 1.8, "host_pace_us": 30.0})  # the extra one, out of the way
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[16], device="cpu", process_repeats=2), CATALOG)
    run_next(engine, {**QUIET, "round_speedup": 2.0, "host_pace_us": 21.4})
    run_next(engine, {**QUIET, "round_speedup": 1.6, "host_pace_us": 22.0})
    (extra,) = [j for j in jobs(engine).values() if j.status == "queued" and j.spec["batch_size"] == 16]
    assert "disagree by 25%" in extra.follow_up["because"] and "host paces" not in extra.follow_up["because"]


def test_a_cold_first_call_whose_compile_another_process_disturbed_is_left_out_of_the_cold_spread(engine):
    """A cold first call compiled while another process took the job's cores (results.first_call_disturbed, migration
    0022) is left out of its configuration's cold first calls, the same by SQL over the database and over the runs
    in hand, and out of the answer's cold figure while an undisturbed one is in view; the figure says so."""
    from db.reports import answer_columns
    from lab.answer import Runs, headline_value

    gpu = {**QUIET, "device_name": "gpu0", "first_call_cache": "cold"}
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=3), CATALOG)
    for seconds, shaken in ((10.0, False), (11.0, None), (30.0, True)):  # None: stored before it was measured
        run_next(engine, {**gpu, "compiled_first_call_s": seconds, "first_call_disturbed": shaken})
    stored = spreads(engine)
    in_hand, keys = answer_columns(engine)
    assert Runs(in_hand, keys).spreads().colds == stored.colds
    (cold,) = stored.colds.values()
    assert cold.processes == 2 and np.exp(cold.mean) == pytest.approx((10.0 * 11.0) ** 0.5)
    (row,) = report(engine)
    assert row["first_call_cold_s"] == 10.5 and row["cold_disturbed"] == 1
    assert headline_value(row, "first_call_cold_s") == "10.5 (2 processes; 1 disturbed compile left out)"
