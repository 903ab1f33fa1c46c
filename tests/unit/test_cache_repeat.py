"""A configuration's kept compile caches (runner.worker.cache_repeat), on a real folder: a follow-up compiles only in
a folder whose run succeeded and was kept, never in one a sibling worker (the workers of `work --gpus` share a home)
is still filling; follow-ups' folders never push first runs' out; a dead worker's half-filled folder goes once stale."""
import os
import time

from runner.worker import cache_repeat as cr


def test_a_folder_is_found_only_once_its_run_succeeded_and_it_was_kept(tmp_path):
    first = cr.fresh(tmp_path, "cfg", 1)
    assert cr.find(tmp_path, "cfg") is None  # its first run is still compiling in it
    cr.settle(first, keep=True)
    assert cr.find(tmp_path, "cfg") == first
    sibling = cr.fresh(tmp_path, "cfg", 7, follow_up=True)  # a follow-up that found none elsewhere, compiling
    assert sibling.name == "cfg-r7" and cr.find(tmp_path, "cfg") == first
    cr.settle(sibling, keep=True)
    assert cr.find(tmp_path, "cfg") == sibling  # the newest kept
    failed = cr.fresh(tmp_path, "cfg", 9, follow_up=True)
    cr.settle(failed, keep=False)
    assert not failed.exists() and cr.find(tmp_path, "cfg") == sibling and cr.find(tmp_path, "other") is None


def test_follow_ups_never_push_a_first_runs_folder_out_and_stale_unkept_ones_go(tmp_path):
    firsts = [cr.fresh(tmp_path, f"a{i}", i) for i in range(3)]
    for p in firsts:
        cr.settle(p, keep=True)
    repeats = [cr.fresh(tmp_path, f"b{i}", 100 + i, follow_up=True) for i in range(5)]
    for p in repeats:
        cr.settle(p, keep=True)
    for age, p in enumerate(reversed(firsts + repeats)):  # kept in this order, a second apart
        os.utime(p / cr.KEPT, (time.time() - age, time.time() - age))
    dead, filling = cr.fresh(tmp_path, "c", 200), cr.fresh(tmp_path, "d", 201)
    old = time.time() - cr.STALE_S - 60
    os.utime(dead, (old, old))
    cr.prune(tmp_path / cr.FOLDER, keep_n=2)
    left = {p.name for p in (tmp_path / cr.FOLDER).iterdir()}
    assert left == {firsts[1].name, firsts[2].name, repeats[3].name, repeats[4].name, filling.name}, left


def test_a_follow_up_keeps_the_compiled_kernels_but_picks_its_own_launch_settings(tmp_path):
    first = cr.fresh(tmp_path, "cfg", 1)
    kernel = first / "inductor" / "ji" / "cjivfv.py"
    kernel.parent.mkdir(parents=True)
    kernel.write_text("# a kernel's source")
    pick = kernel.parent / "abc123.best_config"
    pick.write_text('{"XBLOCK": 1024, "num_warps": 4}')
    cubin = first / "triton" / "x" / "k.cubin"
    cubin.parent.mkdir(parents=True)
    cubin.write_bytes(b"\x7fELF")
    cr.settle(first, keep=True)
    assert cr.retune(cr.find(tmp_path, "cfg")) == 1
    assert not pick.exists() and kernel.exists() and cubin.exists() and (first / cr.KEPT).exists()
    assert cr.retune(first) == 0
