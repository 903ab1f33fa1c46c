"""Numbers too big for Python or the database, and ids that are not ids: a 5,000-digit integer in every numeric
flag, a job id past 2**63, more torch threads than the worker has CPUs. Each is refused at the edge with exit
code 2 and one line naming the flag, nothing stored, no traceback. Through runner.cli.main.main in this process (the
adversarial bench's way), on a real SQLite file and a real PostgreSQL database."""
import pytest

from db import artifacts, queue
from db.database import get_engine
from db.engine import atomic
from db.models import Artifact, JobStatus
from lab import artifact_files
from lab.checks import SpecError, integer
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from runner.child.disturbance import my_cpus
from runner.cli import main as cli
from tests.conftest import FIXTURE_MODELS

BIG = "9" * 5000
BASE = ["--model", "tiny", "--batch", "2", "--device", "cpu", "--models-dir", str(FIXTURE_MODELS)]
SUBMIT_FLAGS = [("--batch", BIG, "--batch"), ("--batch", f"8,{BIG}", "--batch"), ("--iters", BIG, "--iters"),
                ("--timeout", BIG, "--timeout"), ("--repeat", BIG, "--repeat"), ("--reruns", BIG, "--reruns"),
                ("--process-repeats", BIG, "--process-repeats"), ("--schedule", f"4,{BIG}", "--schedule"),
                ("--arg", f"width={BIG}", "--arg width"), ("--arg", f"width=-{BIG}", "--arg width")]


def main(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = cli.main(argv)
    except SystemExit as e:  # argparse's own refusals
        code = e.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("flag,value,named", SUBMIT_FLAGS, ids=[f"{f}{i}" for i, (f, _, _) in enumerate(SUBMIT_FLAGS)])
def test_a_5000_digit_number_in_any_submit_flag_is_refused_naming_it(db_url, capsys, flag, value, named):
    code, err = main(["submit", "--db", db_url, *BASE, flag, value], capsys)
    assert code == 2 and err.startswith(f"error: {named}: ") and "too large" in err, err[:300]
    assert err.count("\n") == 1 and len(err) < 200 and "Traceback" not in err
    assert queue.status_counts(get_engine(db_url)) == {}


def test_huge_integers_from_any_way_in_are_spec_errors():
    for value in (BIG, "-" + BIG, 10 ** 5000, 10 ** 18, 1e300):
        with pytest.raises(SpecError, match="too large"):
            integer(value, "iters")
    assert integer("000000000000000000000000012", "iters") == 12  # leading zeros are no size


@pytest.mark.parametrize("argv,named", [
    (["work", "--max-jobs", BIG], "--max-jobs"), (["work", "--threads", BIG], "--threads"),
    (["work", "--lease", BIG], "--lease"), (["work", "--grace", BIG], "--grace"), (["work", "--gpu", BIG], "--gpu"),
    (["work", "--gpus", f"0,{BIG}"], "--gpus"), (["cancel", BIG], "job_id"), (["export", "--format", "csv", "--sweep",
                                                                             BIG], "--sweep"),
    (["artifact", BIG, "trace"], "job_id"), (["artifact", "9223372036854775808", "trace"], "job_id"),
], ids=["max-jobs", "threads", "lease", "grace", "gpu", "gpus", "cancel", "export-sweep", "artifact", "artifact-2**63"])
def test_other_numeric_flags_refuse_a_5000_digit_number(db_url, capsys, argv, named):
    code, err = main([argv[0], "--db", db_url, *argv[1:]], capsys)
    last = err.strip().splitlines()[-1]
    assert code == 2 and named in last and len(last) < 250 and "Traceback" not in err, err[-300:]


def test_more_threads_than_the_workers_cpus_are_refused_naming_the_flag(db_url, capsys):
    from lab import cpu_quota

    cpus = cpu_quota.here()  # its affinity under its cgroup's CPU quota
    assert cpus <= len(my_cpus())
    code, err = main(["work", "--db", db_url, "--once", "--threads", str(cpus + 1)], capsys)
    assert code == 2 and err == (f"error: --threads must be between 1 and {cpus} (the CPUs this worker may run "
                                 f"on, under its cgroup's CPU quota), got {cpus + 1}\n")


def test_an_artifact_id_past_the_columns_range_and_a_damaged_artifact_end_in_one_line(any_db_url, capsys, tmp_path):
    engine = get_engine(any_db_url)
    code, err = main(["artifact", "--db", any_db_url, "9223372036854775808", "output_code"], capsys)
    assert code == 2 and "is not a job or sweep id" in err and "OverflowError" not in err
    queue.submit(engine, SweepRequest(model="tiny", batch_sizes=[2], device="cpu", process_repeats=1),
                 {"tiny": ModelInfo("tiny", "d")})
    claim = queue.claim_next(engine, "w", ["cpu"], ["tiny"], 60)
    artifact_files.write_dir(tmp_path, {"output_code": "def call(args): pass\n", "trace": "V1 {}\n"})
    assert queue.finish(engine, claim.job_id, claim.token, JobStatus.FAILED, "x", artifacts=artifact_files.read_dir(tmp_path))
    with atomic(engine) as s:  # a row damaged by hand or by a disk: not gzip any more
        s.query(Artifact).filter(Artifact.name == "output_code").update({"data": b"\x1f\x8bnot gzip at all"})
    code, err = main(["artifact", "--db", any_db_url, str(claim.job_id), "output_code"], capsys)
    assert code == 2 and err.startswith(f"error: job {claim.job_id}'s artifact 'output_code' is damaged")
    assert err.count("\n") == 1
    assert artifacts.text(engine, claim.job_id, "trace") == "V1 {}\n"  # the job's other artifacts read as ever
    code, err = main(["artifact", "--db", any_db_url, str(claim.job_id), "a\0b"], capsys)
    assert code == 2 and "is not an artifact name" in err


def test_a_disturbance_by_the_labs_own_dashboard_is_named_so(monkeypatch, tmp_path):
    """On a small machine the pages a user opens while a job is timed share its cores: the embedded worker's child
    is told its dashboard's pid (dashboard.state.embedded), and a busy process with it is named in words."""
    import os

    from lab.noise import DASHBOARD_PID_ENV, DASHBOARD_PIDS_ENV
    from runner.child import disturbance as d

    dashboard, browser = 424242, 515151
    monkeypatch.delenv(DASHBOARD_PIDS_ENV, raising=False)
    monkeypatch.setenv(DASHBOARD_PID_ENV, str(dashboard))
    before = d.Reading(at=0.0, busy=0, procs={dashboard: ("python", 0, 1, 0), browser: ("chromium", 0, 1, 0)})
    busy = int(1.0 * d.TICK)  # each used a second of CPU over a 2-second look at 2 cores
    after = d.Reading(at=2.0, busy=2 * busy, procs={dashboard: ("python", busy, 1, 0), browser: ("chromium", busy, 1, 0)})
    causes, measured = d.host_causes(before, after, {0, 1})
    assert causes and "this lab's dashboard server (pid 424242) 0.5" in causes[0] and "chromium (pid 515151)" in causes[0]
    assert {o["name"] for o in measured["busiest_others"]} == {"this lab's dashboard server", "chromium"}
    monkeypatch.delenv(DASHBOARD_PID_ENV)
    causes, _ = d.host_causes(before, after, {0, 1})
    assert "python (pid 424242)" in causes[0] and "dashboard" not in causes[0]  # a worker started on its own: no name
    apps = tmp_path / "apps"  # a restarted app that adopted the worker: named in the file beside it
    apps.write_text("111\n424242\n")
    monkeypatch.setenv(DASHBOARD_PIDS_ENV, str(apps))
    causes, _ = d.host_causes(before, after, {0, 1})
    assert "this lab's dashboard server (pid 424242)" in causes[0]
    assert os.getppid() not in (dashboard, browser)


def test_a_compile_workers_compilers_are_the_jobs_own_and_another_process_names_the_compile():
    """Around the compiled first call (runner.child.measure) the same reading names what else ran: inductor's compile
    worker under the job's child is the job's own, with the g++ processes it started and reaped inside the window (its
    cutime), which /proc no longer lists; a process outside the job is named, the window in the words."""
    import os

    from runner.child import disturbance as d

    me, worker, stranger, second = os.getpid(), 900001, 900002, int(d.TICK)
    before = d.Reading(at=0.0, busy=0, own=0.0, procs={worker: ("python", 0, me, 0), stranger: ("yes", 0, 1, 0)})
    # 4 s at 2 cores: the compile worker ran 1 s itself and its compilers 3 s (reaped by it); nothing else ran
    after = d.Reading(at=4.0, busy=4 * second, own=0.0, procs={worker: ("python", second, me, 3 * second),
                                                              stranger: ("yes", 0, 1, 0)})
    causes, measured = d.host_causes(before, after, {0, 1}, during="the compile")
    assert causes == [] and measured["own_helpers"][0]["cpu_s"] == 4.0 and measured["others_cpu_s"] == 0.0
    busy = d.Reading(at=4.0, busy=6 * second, own=0.0, procs={worker: ("python", second, me, 3 * second),
                                                             stranger: ("yes", 2 * second, 1, 0)})
    causes, measured = d.host_causes(before, busy, {0, 1}, during="the compile")
    assert causes == ["other processes used 0.5 of the job's 2 cores during the compile (yes (pid 900002) 0.5)"]
    # time no process still there accounts for (a `runner status` that started and ended inside the window): said so
    gone = d.Reading(at=4.0, busy=6 * second, own=0.0, procs={worker: ("python", second, me, 3 * second),
                                                             stranger: ("yes", 0, 1, 0)})
    causes, _ = d.host_causes(before, gone, {0, 1}, during="the compile")
    assert causes == ["other processes used 0.5 of the job's 2 cores during the compile (0.5 by processes that ended "
                      "meanwhile or ran briefly)"]


def test_a_compiler_reaped_inside_the_window_counts_only_its_time_inside_it_and_steal_names_the_window():
    """A g++ under the compile worker that had run 5 s before the window and is reaped inside it lands whole in its
    parent's reaped time: only its 0.2 s inside the window is the job's, so a stranger's 3 s over 4 s of 2 cores is
    still named (a review found it hidden). Steal time names its window too."""
    import os

    from runner.child import disturbance as d

    me, worker, gcc, stranger, tick = os.getpid(), 900001, 900003, 900002, int(d.TICK)
    before = d.Reading(at=0.0, busy=0, own=0.0, procs={worker: ("python", 0, me, 0), gcc: ("cc1plus", 5 * tick, worker, 0),
                                                       stranger: ("yes", 0, 1, 0)})
    after = d.Reading(at=4.0, busy=int(3.2 * tick), own=0.0, procs={worker: ("python", 0, me, int(5.2 * tick)),
                                                                     stranger: ("yes", 3 * tick, 1, 0)})
    causes, measured = d.host_causes(before, after, {0, 1}, during="the compile")
    assert measured["others_cpu_s"] == pytest.approx(3.0) and causes and "yes (pid 900002)" in causes[0]
    stolen = d.Reading(at=4.0, busy=0, steal=2 * tick, own=0.0, procs={worker: ("python", 0, me, 0),
                                                                       stranger: ("yes", 0, 1, 0)})
    quiet = d.Reading(at=0.0, busy=0, own=0.0, procs={worker: ("python", 0, me, 0), stranger: ("yes", 0, 1, 0)})
    causes, _ = d.host_causes(quiet, stolen, {0, 1}, during="the compile")
    assert causes == ["the hypervisor took 25% of the job's cores during the compile (steal time)"]


def test_on_a_gpu_the_compile_window_names_another_process_on_the_gpu_and_a_thermal_brake_not_clock_moves(monkeypatch):
    """On a GPU the compile's window also reads NVML (runner.child.disturbance.Around, runner.child.gpu_watch):
    another process computing on the job's GPU, or a thermal brake, is a measured cause named for the compile; the SM
    clock's moves are not (a compile leaves the GPU idle between its kernels). No GPU here: NVML is the one part
    faked, through its module."""
    import os
    import sys
    import types

    from runner.child import disturbance as d

    me = os.getpid()
    state = {"reasons": 0, "clock": 1980, "samples": [], "running": [me]}

    class Error(Exception):
        pass

    class NotSupported(Error):
        pass

    def utilization(handle, since):
        if state["samples"] is None:
            raise NotSupported()
        return state["samples"]

    fake = types.SimpleNamespace(
        NVMLError=Error, NVMLError_NotFound=type("NotFound", (Error,), {}), NVML_CLOCK_SM=1, nvmlInit=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: "gpu0", nvmlDeviceGetCurrentClocksEventReasons=lambda h: state["reasons"],
        nvmlDeviceGetClockInfo=lambda h, kind: state.pop("clock", 1200),
        nvmlDeviceGetComputeRunningProcesses=lambda h: [types.SimpleNamespace(pid=p) for p in state["running"]],
        nvmlDeviceGetProcessUtilization=utilization)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    sample = lambda around, pid, util: types.SimpleNamespace(pid=pid, smUtil=util,  # noqa: E731
                                                            timeStamp=around.gpu.since_us + 1)

    def window(samples, reasons=0, running=(me,)):
        state.update(reasons=0, running=list(running))
        around = d.Around("the compile", "cuda")
        with around:
            state.update(samples=[sample(around, p, u) for p, u in samples] if samples is not None else None,
                         reasons=reasons)
        return around, [c for c in around.causes if "GPU" in c]

    quiet, words = window([(me, 60)])
    assert not words and quiet.said()["gpu"]["sm_clock_mhz_min"] == 1200  # its own kernels; 1980 to 1200 MHz passes
    _, words = window([(me, 60), (4242, 40)], reasons=0x40)
    assert words == ["the GPU was slowed by hardware thermal slowdown during the compile",
                     "another process computed on the GPU during the compile (pid 4242 at 40% SM)"]
    # our pid namespace (NVML lists the child's context under its pid): a stranger is named even where the child's
    # own brief kernels were not sampled (a review found it dropped)
    _, words = window([(4242, 90)])
    assert words == ["another process computed on the GPU during the compile (pid 4242 at 90% SM)"]
    # a container's other namespace (the child's context listed under a pid not its own): told by count only, against
    # the job's processes that opened the GPU (here the child alone)
    _, words = window([(5000, 30)], running=(5000,))
    assert not words
    _, words = window([(5000, 30), (5001, 20)], running=(5000, 5001))
    assert words == ["more processes computed on the GPU during the compile than the job has (2 against 1; NVML's "
                     "pids are from another pid namespace: pid 5000 at 30% SM, pid 5001 at 20% SM)"]
    unread, words = window(None)  # NVML cannot list who computed (MIG, some virtual GPUs): said, nothing made up
    assert not words and unread.said()["gpu"]["not_measured"].startswith("other processes on the GPU were not read")

    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML where the child runs: said, and nothing made up
    blind = d.Around("the compile", "cuda")
    with blind:
        pass
    assert blind.gpu is None and "the GPU was not watched" in blind.said()["not_measured"]
    assert not [c for c in blind.causes if "GPU" in c]
