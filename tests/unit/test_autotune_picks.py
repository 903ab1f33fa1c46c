"""This process's autotuner picks (runner.child.capture.autotune_picks), read from a real cache folder: the picks
written or rewritten after the snapshot taken before the first calls are its own; those already there (a warm
cache's, a portable bundle's) are not; a folder it cannot read never fails the job."""
import json
import os

import pytest

from runner.child.capture import autotune_picks


def _pick(folder, name, data):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.best_config"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_only_the_picks_written_after_the_snapshot_are_this_processes(tmp_path):
    cached = _pick(tmp_path / "old", "0000", {"XBLOCK": 512, "num_warps": 8})  # a bundle's, loaded before
    rewritten = _pick(tmp_path / "re", "1111", {"XBLOCK": 128, "num_warps": 4})
    earlier = autotune_picks.before(str(tmp_path))
    _pick(tmp_path / "ji", "aaaabbbbccccdddd", {"XBLOCK": 1024, "num_warps": 4, "num_stages": 1,
                                                "configs_hash": "h", "time_taken_ms": 70})
    _pick(tmp_path / "k2", "eeeeffff", {"XBLOCK": 64, "R0_BLOCK": 8, "num_warps": 2, "num_stages": 1})
    _pick(tmp_path / "ji", "broken", "{not json")
    rewritten.write_text(json.dumps({"XBLOCK": 256, "num_warps": 4}))
    os.utime(rewritten, ns=(os.stat(rewritten).st_atime_ns, earlier[str(rewritten)] + 1_000_000))
    got = autotune_picks.picked(earlier, str(tmp_path))
    assert got == {"count": 3, "picks": {"ji/aaaabbbbcccc": {"XBLOCK": 1024, "num_warps": 4, "num_stages": 1},
                                         "k2/eeeeffff": {"XBLOCK": 64, "R0_BLOCK": 8, "num_warps": 2,
                                                            "num_stages": 1},
                                         "re/1111": {"XBLOCK": 256, "num_warps": 4}}}
    assert str(cached) in earlier


def test_no_cache_folder_means_no_picks_not_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _pick(tmp_path / "stray", "x", {"XBLOCK": 1})  # in the working directory: not a cache
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    assert autotune_picks.before() == {} and autotune_picks.picked({}) == {"count": 0, "picks": {}}
    assert autotune_picks.picked({}, str(tmp_path / "none")) == {"count": 0, "picks": {}}


def test_the_picks_kept_are_capped_but_all_are_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(autotune_picks, "LIMIT", 3)
    for i in range(5):
        _pick(tmp_path / f"d{i}", f"p{i}", {"XBLOCK": 2 ** i, "num_warps": 1})
    got = autotune_picks.picked({}, str(tmp_path))
    assert got["count"] == 5 and len(got["picks"]) == 3


def test_a_cache_that_cannot_be_read_gives_an_error_note_never_an_exception(tmp_path, monkeypatch):
    def broken(root):
        raise FileNotFoundError("a folder went while walking")

    monkeypatch.setattr(autotune_picks, "_files", broken)
    got = autotune_picks.picked({}, str(tmp_path))
    assert got["count"] == 0 and got["error"].startswith("FileNotFoundError")
    assert autotune_picks.before(str(tmp_path)) == {}


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_follow_ups_re_timing_is_left_out_of_its_warm_first_call(monkeypatch):
    """runner.child.recording.fresh_first_call_s: a follow-up that timed its kernels' launch settings again, only
    because its cache's picks were removed, reports the warm first call a cache holding them pays; a first run's
    runtime autotuning stays in (a fresh process pays it). And torch's count is read where torch keeps it."""
    from types import SimpleNamespace

    import torch._dynamo.utils as dynamo_utils

    from runner.child.recording import FirstCalls, fresh_first_call_s

    def calls(retimed_s, autotune_s=0.5):
        return FirstCalls(eager_first_s=0.1, eager_second_s=0.01, compiled_first_s=2.0, compiled_second_s=0.01,
                          peak_eager=None, peak_compiled=None, memory_method="", metrics=[], graph_count=1,
                          accuracy={}, autotune_s=autotune_s, retimed_s=retimed_s)

    assert fresh_first_call_s(calls(0.0), 0.0) == 2.0  # a first run: its autotuning is a fresh process's cost
    assert abs(fresh_first_call_s(calls(0.5), 0.0) - 1.5) < 1e-9
    assert fresh_first_call_s(calls(5.0), 0.0) == 0.0  # never below nothing
    monkeypatch.setattr(dynamo_utils, "get_compilation_metrics",
                        lambda: [SimpleNamespace(runtime_triton_autotune_time_us=70_000),
                                 SimpleNamespace(runtime_triton_autotune_time_us=None)])
    monkeypatch.setattr(dynamo_utils, "get_runtime_metrics_context",
                        lambda: SimpleNamespace(_metrics={"runtime_triton_autotune_time_us": 6_000}))
    assert autotune_picks.runtime_autotune_us() == 76_000
    monkeypatch.setattr(dynamo_utils, "get_runtime_metrics_context", lambda: 1 / 0)
    assert autotune_picks.runtime_autotune_us() is None  # a torch that keeps no such count: unknown, not none
