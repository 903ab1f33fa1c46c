"""A team's warm cache, the database side (db.caches) and the worker's (runner.portable), without a compile: the
key changes with what changes the compiled code and only then; the newest bundle of a key is loaded; a portable
job with none is told so and saves its own; the size cap."""
from db import caches
from db.spec import ExperimentSpec
from runner import portable

PROBE = {"torch_version": "2.13.0+cpu", "triton_version": None, "cpu_name": "AMD EPYC", "device_name": None,
         "capability": None}


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
    assert caches.store(engine, "k1", {"model": "tiny"}, None, b"old", {})
    assert caches.store(engine, "k1", {"model": "tiny"}, None, b"newer", {})
    assert caches.find(engine, "k1").data == b"newer" and caches.find(engine, "k1").bytes == 5
    assert not caches.store(engine, "k2", {}, None, b"", {})
    assert not caches.store(engine, "k2", {}, None, b"x" * (caches.MAX_CACHE_BYTES + 1), {})
    assert caches.find(engine, "k2") is None and [e["key"] for e in caches.listing(engine)] == ["k1"]  # newest only


def test_a_portable_job_without_artifacts_says_so_and_saves_its_own(engine, tmp_path):
    env = {}
    note = portable.prepare(engine, spec(), PROBE, tmp_path, env)
    assert note["note"].startswith(caches.NO_ARTIFACTS) and "source" not in note
    assert portable.LOAD_ENV not in env and env[portable.SAVE_ENV] == str(tmp_path / portable.SAVE_FILE)
    # the child saved a bundle: the worker stores it, so the next portable job of this key finds it
    (tmp_path / portable.SAVE_FILE).write_bytes(b"bundle")
    result = {"detail": {"mega_cache": {"saved": {"bytes": 6, "keys": {"inductor": ["a"]}}}}}
    portable.finish(engine, note, None, result, tmp_path)
    mega = result["detail"]["mega_cache"]
    assert mega["saved"] == {"bytes": 6, "stored": True} and mega["note"].startswith(caches.NO_ARTIFACTS)
    env = {}
    (tmp_path / "next").mkdir()
    again = portable.prepare(engine, spec(), PROBE, tmp_path / "next", env)
    assert again["source"] == {"job_id": None, "bytes": 6} and "note" not in again
    assert (tmp_path / "next" / portable.LOAD_FILE).read_bytes() == b"bundle" and portable.SAVE_ENV not in env


def test_a_warm_job_neither_loads_nor_saves(engine, tmp_path):
    env = {}
    assert portable.prepare(engine, spec(cache="warm"), PROBE, tmp_path, env) is None and env == {}
