"""Traffic replay end to end on the CPU (issue 29): the real CLI, worker and child, real dynamo. A stream of 14
calls over 12 sizes: with dynamic=False each new size recompiles until torch's recompile limit (8), then the
frame runs eagerly for sizes it holds no graph for; dynamic=True compiles once; buckets of 16 compile one graph
per bucket. Every count the lab records is held equal to torch._dynamo.utils.counters read in the same child
(kept beside the stream), and the fallback calls to what the stream's sizes imply. backend=eager: dynamo's own
recompiles and limit, without 8 inductor code generations on 2 cores."""
import pytest

from tests.conftest import records, submit, work

SIZES = [4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 8, 48, 36]
LIMIT = 8  # torch._dynamo.config.recompile_limit's default


def test_a_stream_counts_recompiles_the_limit_and_the_fallback_as_torch_does(db_url, tmp_path):
    stream = ",".join(map(str, SIZES))
    common = ("--model", "mlp", "--batch", "8", "--device", "cpu", "--backend", "eager", "--iters", "3",
              "--trace", "false", "--traffic", stream)
    static, dynamic = submit(db_url, *common, "--dynamic", "false", "--dynamic", "true")
    (bucketed,) = submit(db_url, *common, "--dynamic", "false", "--bucket", "16")
    work(db_url, tmp_path / "home", "--max-jobs", "3")
    recs = records(db_url)
    for job_id in (static, dynamic, bucketed):
        r = recs[job_id]
        assert r["status"] == "succeeded", r["error"]
        t = r["traffic"]
        assert t["calls"] == len(SIZES) and t["complete"] and t["error"] is None
        assert t["stream"]["size"] == SIZES
        assert t["eager_total_s"] == pytest.approx(sum(t["stream"]["eager_s"]))
        assert t["compiled_total_s"] == pytest.approx(sum(t["stream"]["compiled_s"]))
        assert t["ratio"] == pytest.approx(t["compiled_total_s"] / t["eager_total_s"])
        counters = t["torch_counters"]
        assert t["compiles"] == counters["frames_ok"]  # the compilation metrics against dynamo's counters
        assert t["graphs"] == t["compiles"] and counters["unique_graphs"] <= t["compiles"]
        assert t["limit_hits"] == counters["limit_refusals"]
        assert t["recompiles"] == t["compiles"] - 1  # one frame: every compile after the stream's first

    s = recs[static]["traffic"]
    distinct = list(dict.fromkeys(SIZES))
    compiled_sizes = set(distinct[:LIMIT])
    # after the limit, a call of a size no graph was compiled for runs eagerly; a compiled size (8) still hits
    expected_fallback = [i >= SIZES.index(distinct[LIMIT]) and size not in compiled_sizes for i, size in enumerate(SIZES)]
    assert s["stream"]["fallback"] == expected_fallback and s["fallback_calls"] == sum(expected_fallback) == 5
    assert (s["compiles"], s["recompiles"], s["limit_hits"], s["graphs"]) == (LIMIT, LIMIT - 1, 1, LIMIT)
    assert s["stream"]["limit_hit"].index(True) == SIZES.index(distinct[LIMIT])
    assert len(s["reasons"]) == LIMIT - 1 and "size mismatch" in s["reasons"][0]["reason"]

    d = recs[dynamic]["traffic"]
    assert d["fallback_calls"] == 0 and d["limit_hits"] == 0 and d["compiles"] <= 2

    b = recs[bucketed]["traffic"]
    assert b["bucket"] == 16 and b["stream"]["padded"] == [-(-x // 16) * 16 for x in SIZES]
    assert b["compiles"] == b["distinct_padded"] == 3 and b["fallback_calls"] == 0 and b["limit_hits"] == 0
