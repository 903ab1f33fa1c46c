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


def test_a_held_folder_is_one_follow_ups_at_a_time(tmp_path):
    folder = cr.fresh(tmp_path, "cfg", 1)
    cr.settle(folder, keep=True)
    mine = cr.hold(folder)
    assert mine is not None and cr.hold(folder) is None  # a sibling worker's follow-up: not while it is held
    cr.release(mine)
    again = cr.hold(folder)
    assert again is not None
    cr.release(again)


def test_a_follow_up_that_finds_its_first_runs_folder_held_compiles_cold_in_its_own(tmp_path):
    """runner.worker.attempt.Attempt.prepare, on a real folder: the free folder is taken (held, its picks removed);
    a held one is left to its holder, and the follow-up gets a fresh folder of its own, kept for later ones."""
    import threading
    from types import SimpleNamespace

    from db.queue import Claim
    from lab.spec import ExperimentSpec
    from runner.worker.attempt import Attempt, JobPaths, Lent

    spec = ExperimentSpec(model="simplenet", batch_size=8, device="cpu", cache="cold")
    lent = Lent(env={}, spawner=None, home=tmp_path, models_dirs=[], probe={"torch_version": "2.13.0+cpu"},
                signer=None, worker_id="w", hostname="h", cpus=[0], threads=1, beat_s=1.0, grace_s=1.0,
                stop=threading.Event(), hurry=threading.Event(), strikes=None)
    name = cr.key(spec.to_dict(), "2.13.0+cpu")
    first = cr.fresh(tmp_path, name, 1)
    pick = first / "inductor" / "ji" / "p.best_config"
    pick.parent.mkdir(parents=True)
    pick.write_text("{}")
    cr.settle(first, keep=True)

    def prepared(job_id):
        claim = Claim(job_id=job_id, token="t", attempt=1, spec=spec.to_dict(), follow_up={"kind": "process"})
        return Attempt(claim, spec, JobPaths.under(tmp_path, claim), SimpleNamespace(engine=None), lent,
                       None).prepare()

    taken = prepared(2)
    assert taken.env["TORCHINDUCTOR_CACHE_DIR"] == str(first / "inductor") and taken.held is not None
    assert taken.cold_dir is None and not pick.exists()
    sibling = prepared(3)  # while the first follow-up's child runs
    assert sibling.held is None and sibling.cold_dir == tmp_path / cr.FOLDER / f"{name}-r3"
    assert sibling.env["TORCHINDUCTOR_CACHE_DIR"] == str(sibling.cold_dir / "inductor")
    cr.release(taken.held)


def test_a_folder_pruned_since_it_was_found_is_not_held_and_prune_leaves_a_held_one(tmp_path):
    gone = cr.fresh(tmp_path, "gone", 1)
    cr.settle(gone, keep=True)
    import shutil

    shutil.rmtree(gone)
    assert cr.hold(gone) is None  # a sibling's prune took it between find and hold: compile cold, not a hand-back
    folders = [cr.fresh(tmp_path, f"c{i}", i) for i in range(3)]
    for age, p in enumerate(reversed(folders)):
        cr.settle(p, keep=True)
        os.utime(p / cr.KEPT, (time.time() - age, time.time() - age))
    busy = cr.hold(folders[0])  # the oldest, beyond keep_n, but a follow-up compiles in it now
    cr.prune(tmp_path / cr.FOLDER, keep_n=1)
    assert folders[0].exists() and not folders[1].exists() and folders[2].exists()
    cr.release(busy)
    cr.prune(tmp_path / cr.FOLDER, keep_n=1)
    assert not folders[0].exists()
