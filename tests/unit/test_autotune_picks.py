"""This process's autotuner picks (runner.child.capture.autotune_picks), read from a real cache folder: the picks
written since the process began are its own; older ones (a warm cache's, an earlier process's) are not."""
import json
import os
import time

from runner.child.capture import autotune_picks


def _pick(folder, name, data, age_s=0.0):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.best_config"
    path.write_text(json.dumps(data))
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_only_the_picks_this_process_made_are_its_own(tmp_path):
    began = time.time() - 5
    inductor = tmp_path / "inductor"
    _pick(inductor / "ji", "aaaabbbbccccdddd", {"XBLOCK": 1024, "num_warps": 4, "num_stages": 1,
                                                "configs_hash": "h", "time_taken_ms": 70})
    _pick(inductor / "k2", "eeeeffff", {"XBLOCK": 64, "R0_BLOCK": 8, "num_warps": 2, "num_stages": 1})
    _pick(inductor / "old", "0000", {"XBLOCK": 512, "num_warps": 8}, age_s=3600)  # an earlier process's
    (inductor / "ji" / "broken.best_config").write_text("{not json")
    got = autotune_picks.picked_since(began, str(inductor))
    assert got["count"] == 2
    assert got["picks"] == {"ji/aaaabbbbcccc": {"XBLOCK": 1024, "num_warps": 4, "num_stages": 1},
                            "k2/eeeeffff": {"XBLOCK": 64, "R0_BLOCK": 8, "num_warps": 2, "num_stages": 1}}
    assert autotune_picks.picked_since(began, str(tmp_path / "none")) == {"count": 0, "picks": {}}


def test_the_picks_kept_are_capped_but_all_are_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(autotune_picks, "LIMIT", 3)
    for i in range(5):
        _pick(tmp_path / f"d{i}", f"p{i}", {"XBLOCK": 2 ** i, "num_warps": 1})
    got = autotune_picks.picked_since(time.time() - 60, str(tmp_path))
    assert got["count"] == 5 and len(got["picks"]) == 3
