"""runner.worker.header_warm: inductor's precompiled C++ header is torch's, once per machine and torch install,
outside every compile cache, so a fresh process on a machine that compiled before finds it. A worker builds it
before its first CPU inductor job, in a throwaway process under the job's lease, named in the job's timeline; the
job's compile finds it and builds none of its own, so its cold first call is what a fresh process pays. A machine
whose torch never compiled: a temp dir of the test's own (TMPDIR), where torch keeps the headers."""
from types import SimpleNamespace

from runner.worker import header_warm
from tests.conftest import records, result_detail, submit, work


def test_a_workers_first_cpu_job_finds_the_header_built_before_it(db_url, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"TMPDIR": str(tmp)}
    (job,) = submit(db_url, "--model", "tiny", "--batch", "4", "--device", "cpu", "--iters", "3", "--cache", "cold")
    work(db_url, tmp_path / "home", "--once", env=env)
    r = records(db_url)[job]
    assert r["status"] == "succeeded", r["error"]
    headers = header_warm.header_dir(env)
    assert str(headers).startswith(str(tmp)) and len(list(headers.glob("*.gch"))) == 1  # built once: the job made none
    assert header_warm.marker(env, r["torch_version"]).is_file()
    phases = [e["phase"] for e in r["timeline"]]
    assert phases.index(header_warm.PHASE) < phases.index("child start") < phases.index("compiled first call")
    cpu_job = SimpleNamespace(device="cpu", backend="inductor")
    assert not header_warm.needed(cpu_job, env, r["torch_version"])  # the next worker here finds it warmed
    words = result_detail(db_url, job)["first_call_disturbance"]["causes"]
    assert not [c for c in words if "precompiled C++ header" in c]  # its compile built no header of its own


def test_a_compile_that_builds_the_header_itself_names_it_as_its_cold_first_calls_cause(db_url, tmp_path):
    """Where the worker takes the header as warmed (its marker, and a header of other flags beside it), the job's
    compile builds its own inside its cold first call: the child names that (runner.child.disturbance.Headers), so
    the run's cold figure is not taken for what a fresh process on a machine that compiled before pays."""
    tmp = tmp_path / "tmp"
    env = {"TMPDIR": str(tmp)}
    header_warm.header_dir(env).mkdir(parents=True)
    (header_warm.header_dir(env) / "other-flags.h.gch").write_bytes(b"")
    (job,) = submit(db_url, "--model", "tiny", "--batch", "4", "--device", "cpu", "--iters", "3", "--cache", "cold")
    version = __import__("torch").__version__  # what the worker's probe reads (torch/version.py)
    header_warm.marker(env, version).touch()
    work(db_url, tmp_path / "home", "--once", env=env)
    r = records(db_url)[job]
    assert r["status"] == "succeeded", r["error"]
    assert header_warm.PHASE not in [e["phase"] for e in r["timeline"]]  # the warm-up was skipped
    assert len(list(header_warm.header_dir(env).glob("*.gch"))) == 2  # the job built one
    said = result_detail(db_url, job)["first_call_disturbance"]
    assert r["first_call_disturbed"] is True
    assert [c for c in said["causes"] if c.startswith("the compile built inductor's precompiled C++ header (")]


def test_only_a_cpu_inductor_job_on_an_unwarmed_machine_needs_it(tmp_path):
    env = {"TMPDIR": str(tmp_path)}
    cpu, gpu, eager = (SimpleNamespace(device=d, backend=b) for d, b in (("cpu", "inductor"), ("cuda", "inductor"),
                                                                       ("cpu", "aot_eager")))
    assert header_warm.needed(cpu, env, "2.13.0") and not header_warm.needed(gpu, env, "2.13.0")
    assert not header_warm.needed(eager, env, "2.13.0")
    header_warm.header_dir(env).mkdir(parents=True)
    header_warm.marker(env, "2.13.0").touch()
    assert header_warm.needed(cpu, env, "2.13.0")  # marked, but the headers are gone (a cleaned temp dir)
    (header_warm.header_dir(env) / "x.h.gch").write_bytes(b"")
    assert not header_warm.needed(cpu, env, "2.13.0") and header_warm.needed(cpu, env, "2.14.1")  # another torch
