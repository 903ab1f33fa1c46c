"""The compiler's story beside a result, end to end on the CPU: real worker, real child, real torch.compile of
the tiny fixture model (Linear + tanh). The first of two warm jobs compiles (caches miss), the second finds the
FX graph and AOTAutograd caches filled (hit); both count kernels and keep the output code as an artifact; the
first keeps its trace too and, where the worker has tlparse (PyPI `tlparse`), its report; the second, submitted
with --trace false, does not. A job whose compile fails keeps its trace."""
import zipfile

import pytest

from runner.child.capture.tlparse_report import ENV, executable
from tests.conftest import records, result_detail, run_cli, submit, work


def test_kernels_caches_and_output_code_of_a_real_compile(db_url, tmp_path):
    common = ("--model", "tiny", "--batch", "4", "--device", "cpu", "--iters", "3", "--cache", "warm")
    (first,) = submit(db_url, *common)
    (second,) = submit(db_url, *common, "--trace", "false")  # the same graph: the worker's warm cache holds it
    # a compile that fails keeps its trace: the place to read why (dynamo stops at the graph break: no inductor)
    (broken,) = submit(db_url, "--model", "convnetmix", "--batch", "2", "--device", "cpu", "--fullgraph", "true")
    tlparse = executable()
    work(db_url, tmp_path / "home", "--drain", env={ENV: tlparse or ""})
    recs = records(db_url)
    for job_id in (first, second):
        r = recs[job_id]
        assert r["status"] == "succeeded", r["error"]
        # eager: aten::linear and aten::tanh; compiled: the extern addmm plus one generated kernel for tanh
        assert (r["eager_kernels"], r["compiled_kernels"]) == (2, 2)
        # what the graph saves is host work: linear's transpose/expand/as_strided views and tanh's own dispatch
        assert 0 < r["compiled_host_ops"] < r["eager_host_ops"]
        names = {a["name"]: a for a in r["artifacts"]}
        assert {"output_code", "fx_graphs"} <= set(names)
        assert 0 < names["output_code"]["stored_bytes"] < names["output_code"]["bytes"]  # compressed
        # the first call's parts add up to it, each without what capturing the trace cost inside it (torch times that
        # share; the first call leaves it out): the rest is not squeezed by it
        parts, phases = r["compile_breakdown_s"], r["compile_phases_s"]
        said = result_detail(db_url, job_id)["first_call_parts"]
        traced = said["trace_capture_by_part_s"]
        assert sum(parts.values()) == pytest.approx(r["compiled_first_call_s"], abs=1e-6)
        assert sum(traced.values()) == pytest.approx(said["trace_capture_s"], rel=0.2, abs=2e-3)
        assert traced["aot autograd"] > 0  # a first run captures the trace (--trace false only keeps none of it)
        assert parts["aot autograd"] == pytest.approx(phases["aot_autograd"] - phases.get("inductor", 0.0)
                                                      - traced["aot autograd"], abs=1e-6)
    failed = recs[broken]
    assert failed["status"] == "failed" and "fullgraph=True" in failed["error"]
    assert {a["name"] for a in failed["artifacts"]} == {"trace"} | ({"tlparse"} if tlparse else set())
    assert '"dynamo_start"' in run_cli("artifact", str(broken), "trace", "--db", db_url).stdout
    cold, warm = recs[first]["cache_layers"], recs[second]["cache_layers"]
    assert (cold["fxgraph"]["miss"], cold["fxgraph"]["hit"]) == (1, 0)
    assert (warm["fxgraph"]["miss"], warm["fxgraph"]["hit"]) == (0, 1)
    assert warm["aotautograd"]["hit"] == 1
    out = tmp_path / "code.py"
    done = run_cli("artifact", str(second), "output_code", "-o", str(out), "--db", db_url)
    assert done.returncode == 0, done.stderr
    code = out.read_text()
    assert "def call(" in code and "cpp_fused_tanh" in code and "extern_kernels.addmm" in code
    trace = run_cli("artifact", str(first), "trace", "--db", db_url).stdout
    assert '"fx_graph_cache_miss"' in trace and '"inductor_output_code"' in trace  # TORCH_TRACE's own lines
    assert {a["name"] for a in recs[second]["artifacts"]} == {"output_code", "fx_graphs"}  # --trace false
    has_report = any(a["name"] == "tlparse" for a in recs[first]["artifacts"])
    assert has_report == bool(tlparse)  # without tlparse on the worker, simply no report
    if tlparse:
        report = run_cli("artifact", str(first), "tlparse", "-o", str(tmp_path / "r.zip"), "--db", db_url)
        assert report.returncode == 0, report.stderr
        with zipfile.ZipFile(tmp_path / "r.zip") as z:
            names = z.namelist()
            assert "index.html" in names and "raw.log" not in names
            page = next(n for n in names if "inductor_output_code" in n)
            assert "cpp_fused_tanh" in z.read(page).decode()


def _sine(x):
    return x.sin() + 1


def test_recompiles_name_their_guard_and_a_frame_past_the_limit_is_flagged():
    """Real dynamo in this process (backend eager: no inductor compile): a static frame called with four sizes
    under a limit of two recompiles twice, then hits the limit and runs eagerly."""
    import torch
    from torch._dynamo.utils import get_compilation_metrics

    from runner.child.capture import recompiles

    torch._dynamo.reset()
    before = len(get_compilation_metrics())
    with torch._dynamo.config.patch(recompile_limit=2):
        compiled = torch.compile(_sine, backend="eager", dynamic=False)
        for n in (2, 3, 4, 5):
            assert torch.allclose(compiled(torch.ones(n)), torch.ones(n).sin() + 1)  # eager past the limit
    metrics = list(get_compilation_metrics())[before:]
    torch._dynamo.reset()
    (recompile,) = recompiles.explained(metrics)
    assert "tensor 'x' size mismatch at index 0. expected 2, actual 3" in recompile["reason"]
    assert (recompile["function"], recompile["file"], recompile["source"]) == ("_sine", __file__, "def _sine(x):")
    (hit,) = recompiles.limit_hits(metrics)
    assert hit["function"] == "_sine" and "expected 3, actual 4" in hit["last_reason"]
