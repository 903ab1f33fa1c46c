"""The version diff (lab.versions) from answer rows, and the cold/warm/portable table and a portable job's story
(dashboard.data.cachecompare, dashboard.data.story): pure functions over hand-made rows."""
import pandas as pd

from dashboard.data import cachecompare, story
from lab import versions


def row(config: str, speedup, compiled_ms, first, bs=8, noisy=False) -> dict:
    return {"model": "m", "batch_size": bs, "config": config, "speedup": speedup, "compiled_ms": compiled_ms,
            "first_call_cold_s": first, "noisy": noisy, "job_ids": "1"}


def test_the_same_configuration_under_two_versions_is_judged_past_five_percent():
    rows = [row("default · torch 2.14.1+cu130", 1.50, 0.90, 20.0),
            row("default · torch 2.13.0+cpu", 1.40, 1.00, 10.0),
            row("default · torch 2.9.1", 1.42, 1.02, 10.2),
            row("inductor/max-autotune · torch 2.13.0+cpu", 2.0, 1.0, 30.0)]  # one version only: no pair
    out = versions.diff_rows(rows)
    assert [(r["torch_a"], r["torch_b"]) for r in out] == [("2.9.1", "2.13.0+cpu"), ("2.13.0+cpu", "2.14.1+cu130")]
    new = out[1]
    assert new["config"] == "default"
    assert round(new["speedup_change_pct"], 1) == 7.1 and new["speedup_verdict"] == versions.BETTER
    assert round(new["compiled_ms_change_pct"], 1) == -10.0 and new["compiled_ms_verdict"] == versions.BETTER
    assert new["first_call_s_change_pct"] == 100.0 and new["first_call_s_verdict"] == versions.WORSE
    assert {out[0][f"{m}_verdict"] for m in ("speedup", "compiled_ms", "first_call_s")} == {versions.NEUTRAL}
    assert versions.judge(None, True) is None and versions.judge(-5.0, True) == versions.NEUTRAL
    assert "| default | 2.13.0+cpu → 2.14.1+cu130 |" in versions.rows_markdown(out).replace("| m | 8 ", "")


def test_a_side_disturbed_in_every_run_keeps_its_numbers_and_says_so():
    rows = [row("a · torch 2.13.0", 1.0, 1.2, 10.0, noisy=True), row("a · torch 2.14.0", 1.2, 1.0, 10.0)]
    (only,) = versions.diff_rows(rows)
    assert only["speedup_a"] == 1.0 and only["noisy"] is True and only["speedup_verdict"] == versions.BETTER
    assert versions.diff_rows([row("a", 1.0, 1.0, 1.0)]) == []  # no version in the labels: nothing to diff


def test_cold_warm_and_portable_first_calls_side_by_side():
    base = {"status": "succeeded", "model": "m", "batch_size": 8, "task": "inference", "device": "cpu",
            "dtype": "float32", "backend": "inductor", "mode": "default", "dynamic": "none", "fullgraph": "false",
            "scope": "model"}
    view = pd.DataFrame([{**base, "job_id": 1, "cache": "cold", "cache_state": "cold", "compiled_first_call_s": 18.0},
                         {**base, "job_id": 2, "cache": "portable", "cache_state": "portable",
                          "compiled_first_call_s": 2.0},
                         {**base, "job_id": 3, "cache": "portable", "cache_state": "portable",
                          "compiled_first_call_s": 4.0}])
    table = cachecompare.side_by_side(view)
    assert table.to_dict("records") == [{"configuration": "default", "batch_size": 8, "cold (s)": 18.0,
                                         "portable (s)": 3.0, "runs": 3, "portable vs cold": 6.0}]
    assert cachecompare.side_by_side(view[view["cache"] == "cold"]).empty  # one cache, no portable: nothing to set
    noisy = view.assign(disturbed=True)  # every run disturbed by a measured cause (lab.noise)
    assert cachecompare.side_by_side(noisy)["configuration"].tolist() == ["⚠ noisy · default"]
    # the cold job's process repeat compiled from its cache: warm, as the answer counts it, never in the cold median
    repeat = pd.DataFrame([{**base, "job_id": 4, "cache": "cold", "cache_state": "cold", "first_call_cache": "warm",
                            "compiled_first_call_s": 1.5}])
    (row,) = cachecompare.side_by_side(pd.concat([view, repeat], ignore_index=True)).to_dict("records")
    assert (row["cold (s)"], row["warm (s)"], row["portable (s)"], row["runs"]) == (18.0, 1.5, 3.0, 4)


def test_a_portable_jobs_story_names_the_bundle_or_says_there_was_none():
    loaded = {"cache": "portable", "mega_cache": {
        "key": "abcdef0123456789", "source": {"job_id": 7, "bytes": 72332},
        "loaded": {"mega_cache_loaded": True, "load_s": 0.74, "artifacts": {"inductor": 1, "aot_autograd": 1},
                   "kernel_libraries": 7, "kernel_libraries_built": 0}}}
    (line,) = story.portable_lines(loaded)
    assert line.startswith("Loaded bundle abcdef012345 from job #7: 72,332 bytes") and "none rebuilt here" in line
    missing = {"cache": "portable", "mega_cache": {"key": "k", "note": "no artifacts for this key: ran as a cold run",
                                                   "saved": {"bytes": 10, "stored": True, "kernel_libraries": 1}}}
    assert story.portable_lines(missing) == ["Bundle k: no artifacts for this key: ran as a cold run.",
                                             "Kept its bundle for portable jobs of the same settings: key k, 10 bytes "
                                             "(1 kernel libraries)."]
    assert story.portable_lines({"cache": "warm"}) == []
