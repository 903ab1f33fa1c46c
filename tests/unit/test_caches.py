"""A team's warm cache, the database side (db.caches) and the worker's (runner.worker.cache_bundle), without a compile, on a
real SQLite file and a real PostgreSQL database: the key changes with what changes the compiled code and only then;
the newest bundle of a key is loaded, and only if its signature checks with the worker's key for that very cache
key; a worker without a key neither loads nor keeps bundles; a portable job with none is told so and saves its own;
the size cap."""
import pytest

from db import caches
from db.database import get_engine
from lab.spec import ExperimentSpec
from runner.worker import cache_bundle, cache_key
from tests.conftest import at_head

PROBE = {"torch_version": "2.13.0+cpu", "triton_version": None, "cpu_name": "AMD EPYC", "device_name": None,
         "capability": None}


@pytest.fixture
def engine(any_db_url, migrated_sqlite):
    return get_engine(at_head(any_db_url, migrated_sqlite))


@pytest.fixture
def signer(cache_key_file):
    return cache_key.load(cache_key_file)


def spec(**kw) -> ExperimentSpec:
    return ExperimentSpec(**{"model": "tiny", "batch_size": 8, "device": "cpu", "cache": "portable", **kw})


def key(s: ExperimentSpec, probe=PROBE) -> str:
    return caches.cache_key(caches.key_parts(s, caches.device_env(probe, s.device)))


def test_the_key_follows_the_compile_settings_and_the_environment_only():
    base = key(spec())
    assert key(spec(iters=5, timeout_s=60, cache="cold", schedule=(4, 8), trace=False)) == base
    for changed in (dict(batch_size=16), dict(mode="max-autotune"), dict(dynamic=True), dict(fullgraph=True),
                    dict(dtype="bfloat16"), dict(task="training"), dict(model_args={"width": 32}),
                    dict(backend="aot_eager")):
        assert key(spec(**changed)) != base, changed
    assert key(spec(), {**PROBE, "torch_version": "2.14.1+cu128"}) != base
    assert key(spec(), {**PROBE, "cpu_name": "Intel Xeon"}) != base
    # a GPU job is keyed by the GPU's name and capability, not the CPU's
    gpu = {**PROBE, "device_name": "NVIDIA H100", "capability": "9.0", "triton_version": "3.5.0"}
    parts = caches.key_parts(spec(device="cuda"), caches.device_env(gpu, "cuda"))
    assert (parts["device_name"], parts["capability"], parts["triton_version"]) == ("NVIDIA H100", "9.0", "3.5.0")


def test_the_newest_bundle_of_a_key_is_found_and_the_cap_holds(engine):
    assert caches.find(engine, "k1") is None
    assert caches.store(engine, "k1", {"model": "tiny"}, None, b"old", {}, "s1")
    assert caches.store(engine, "k1", {"model": "tiny"}, None, b"newer", {}, "s2")
    found = caches.find(engine, "k1")
    assert (found.data, found.bytes, found.signature) == (b"newer", 5, "s2")
    assert not caches.store(engine, "k2", {}, None, b"", {}, "s")
    assert not caches.store(engine, "k2", {}, None, b"x" * (caches.MAX_CACHE_BYTES + 1), {}, "s")
    assert caches.find(engine, "k2") is None and [e["key"] for e in caches.listing(engine)] == ["k1"]  # newest only


def test_a_portable_job_without_artifacts_says_so_and_saves_its_own_signed(engine, signer, tmp_path):
    env = {}
    note = cache_bundle.prepare(engine, spec(), PROBE, tmp_path, env, signer)
    assert note["note"].startswith(caches.NO_ARTIFACTS) and "source" not in note
    assert cache_bundle.LOAD_ENV not in env and env[cache_bundle.SAVE_ENV] == str(tmp_path / cache_bundle.SAVE_FILE)
    # the child saved a bundle: the worker stores it, signed, so the next portable job of this key finds it
    (tmp_path / cache_bundle.SAVE_FILE).write_bytes(b"bundle")
    detail = {"mega_cache": {"saved": {"bytes": 6, "keys": {"inductor": ["a"]}}}}
    cache_bundle.finish(engine, note, None, detail, tmp_path, signer)
    mega = detail["mega_cache"]
    assert mega["saved"] == {"bytes": 6, "stored": True} and mega["note"].startswith(caches.NO_ARTIFACTS)
    assert signer.verify(note["key"], b"bundle", caches.find(engine, note["key"]).signature)
    env = {}
    (tmp_path / "next").mkdir()
    again = cache_bundle.prepare(engine, spec(), PROBE, tmp_path / "next", env, signer)
    assert again["source"] == {"job_id": None, "bytes": 6} and "note" not in again
    assert (tmp_path / "next" / cache_bundle.LOAD_FILE).read_bytes() == b"bundle" and cache_bundle.SAVE_ENV not in env
    assert env[cache_bundle.LOAD_SHA_ENV] == cache_key.digest(b"bundle")  # what the child compares before unpacking


def test_a_portable_miss_names_the_setting_that_differs_from_the_nearest_bundle(engine, signer, tmp_path):
    """Issue 29: a portable job that found no bundle for its key says which parts of the key differ from the
    closest bundle stored for its model (one setting here: the mode; then the torch too), on its page's story."""
    from dashboard.data.story import portable_lines

    stored = caches.key_parts(spec(), caches.device_env(PROBE, "cpu"))
    assert caches.store(engine, caches.cache_key(stored), stored, None, b"b", {}, "s")
    other = caches.key_parts(spec(model="other"), caches.device_env(PROBE, "cpu"))
    assert caches.store(engine, caches.cache_key(other), other, None, b"b", {}, "s")  # another model: never nearest
    note = cache_bundle.prepare(engine, spec(mode="max-autotune"), PROBE, tmp_path, {}, signer)
    assert note["nearest"]["differs"] == {"mode": ["max-autotune", "default"]}
    (line,) = portable_lines({"mega_cache": note})
    assert 'differs in mode ("max-autotune" here, "default" in the bundle)' in line
    newer = {**PROBE, "torch_version": "2.14.1+cpu"}
    note = cache_bundle.prepare(engine, spec(mode="max-autotune"), newer, tmp_path, {}, signer)
    assert set(note["nearest"]["differs"]) == {"mode", "torch_version"}
    caches_empty = cache_bundle.prepare(engine, spec(model="third"), PROBE, tmp_path, {}, signer)
    assert "nearest" not in caches_empty and caches_empty["note"].startswith(caches.NO_ARTIFACTS)


def test_a_bundle_loads_only_with_this_keys_signature_for_this_cache_key(engine, signer, tmp_path):
    """Each newer row is one an attacker who can write the database could store; none reaches the job's folder."""
    k, other = key(spec()), key(spec(batch_size=16))
    assert caches.store(engine, k, {}, None, b"genuine", {}, signer.sign(k, b"genuine"))
    stranger = cache_key.Signer((b"s" * 64,))
    tries = {"unsigned": (b"evil", None, "it is unsigned"),
             "altered, the genuine signature kept": (b"evil", signer.sign(k, b"genuine"), "does not check"),
             "a genuine bundle of another key, replayed": (b"other", signer.sign(other, b"other"), "does not check"),
             "signed with another key": (b"evil", stranger.sign(k, b"evil"), "does not check"),
             "a signature that is no hex": (b"evil", "x" * 64, "does not check")}
    for n, (what, (data, signature, why)) in enumerate(tries.items()):
        assert caches.store(engine, k, {}, None, data, {}, signature)
        env, folder = {}, tmp_path / str(n)
        folder.mkdir()
        note = cache_bundle.prepare(engine, spec(), PROBE, folder, env, signer)
        assert note["note"].startswith(f"refused the newest bundle for this key (from no job, {len(data)} bytes): "), what
        assert why in note["note"] and note["note"].endswith("nothing from it was written or loaded, ran as a cold run")
        assert "source" not in note and not (folder / cache_bundle.LOAD_FILE).exists(), what
        assert cache_bundle.LOAD_ENV not in env and env[cache_bundle.SAVE_ENV], what  # a cold run that keeps its own


def test_a_worker_without_a_key_neither_loads_nor_keeps_bundles(engine, signer, tmp_path):
    k = key(spec())
    assert caches.store(engine, k, {}, None, b"genuine", {}, signer.sign(k, b"genuine"))
    for cache, says in (("portable", "it neither loads nor keeps bundles; ran as a cold run"),
                        ("cold", "it keeps no bundle")):
        env = {}
        note = cache_bundle.prepare(engine, spec(cache=cache), PROBE, tmp_path, env, None)
        assert note["note"] == f"{cache_bundle.NO_KEY}: {says}" and env == {} and "source" not in note
        assert not (tmp_path / cache_bundle.LOAD_FILE).exists()


def test_a_warm_job_neither_loads_nor_saves(engine, signer, tmp_path):
    env = {}
    assert cache_bundle.prepare(engine, spec(cache="warm"), PROBE, tmp_path, env, signer) is None and env == {}


def test_the_key_file_is_refused_unless_private_and_long(tmp_path, monkeypatch):
    path = tmp_path / "k"
    monkeypatch.delenv(cache_key.KEY_FILE_ENV, raising=False)
    assert cache_key.load(None) is None
    with pytest.raises(cache_key.CacheKeyError, match="k: No such file"):
        cache_key.load(path)
    path.write_text("a" * 64)
    path.chmod(0o644)
    with pytest.raises(cache_key.CacheKeyError, match=r"readable or writable by others \(mode 0644\); chmod 600"):
        cache_key.load(path)
    path.chmod(0o600)
    path.write_text("short\n")
    with pytest.raises(cache_key.CacheKeyError, match="key 1 is shorter than 32 characters"):
        cache_key.load(path)
    path.write_text("# the new key signs; the old one still verifies while workers change over\n" + "n" * 64 + "\n"
                    + "o" * 64 + "\n")
    monkeypatch.setenv(cache_key.KEY_FILE_ENV, str(path))
    signer = cache_key.load(None)
    old = cache_key.Signer((b"o" * 64,))
    assert signer.verify("k", b"d", old.sign("k", b"d")) and signer.verify("k", b"d", signer.sign("k", b"d"))
    assert not old.verify("k", b"d", signer.sign("k", b"d"))
    assert "nnnn" not in repr(signer) and "oooo" not in repr(signer)


def test_the_child_unpacks_only_the_bytes_the_worker_checked_and_within_the_limit(tmp_path, monkeypatch):
    """runner.child.cache_bundle.load, the child's side: a file that is not the one checked, one without a digest, and a
    signed bundle that unpacks past the limit are refused before anything is written; a good one is unpacked."""
    from bench.bombs import zip_bomb
    from runner.child import cache_bundle as child_bundle

    inductor, bundle = tmp_path / "inductor", tmp_path / cache_bundle.LOAD_FILE
    inductor.mkdir()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(inductor))
    monkeypatch.setenv(child_bundle.LOAD_ENV, str(bundle))
    fine = zip_bomb({"kernels/ab/k.so": b"\x7fELF fine"})
    bomb = zip_bomb({"kernels/ab/k.so": b"\x7fELF fine", "kernels/cd/big.so": 1 << 30})
    for data, checked, says in ((zip_bomb({"kernels/ab/evil.so": b"\x7fELF evil"}), fine, "is not the one whose "
                                 "signature the worker checked"), (fine, None, "is not the one whose signature"),
                                (bomb, bomb, "the compile cache bundle unpacks to more than 536,870,912 bytes, the "
                                             "limit: refused; nothing from it was written or loaded")):
        bundle.write_bytes(data)
        monkeypatch.setenv(child_bundle.LOAD_SHA_ENV, cache_key.digest(checked) if checked else "")
        out = child_bundle.load()
        assert says in out["error"] and out["kernel_libraries"] == 0 and not list(inductor.rglob("*"))
    bundle.write_bytes(fine)
    monkeypatch.setenv(child_bundle.LOAD_SHA_ENV, cache_key.digest(fine))
    out = child_bundle.load()
    assert "error" not in out and out["kernel_libraries"] == 1 and (inductor / "ab" / "k.so").read_bytes() == b"\x7fELF fine"
