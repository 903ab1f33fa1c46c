"""Issue 29, cache-miss forensics: a portable job whose key differs from the stored bundle's in one setting names that
setting on its job page (the note runner.portable.prepare wrote, as the worker stores it in detail.mega_cache)."""
from db import caches, queue
from db.models import JobStatus
from lab.spec import ExperimentSpec
from lab.sweep import SweepRequest
from runner import portable, signing, zoo
from tests.dashboard.test_pages import lab, ok, page, worker  # noqa: F401 (fixtures)

PROBE = {"torch_version": "2.13.0+cpu", "triton_version": None, "cpu_name": "AMD EPYC", "device_name": None,
         "capability": None}


def test_a_portable_miss_names_the_differing_setting_on_the_job_page(worker, cache_key_file, tmp_path):  # noqa: F811
    engine = worker
    stored = caches.key_parts(ExperimentSpec(model="simplenet", batch_size=8, device="cpu", cache="cold"),
                              caches.device_env(PROBE, "cpu"))
    assert caches.store(engine, caches.cache_key(stored), stored, None, b"bundle", {}, "s")
    _, (job_id,), _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu",
                                                        cache="portable", modes=["max-autotune"], process_repeats=1),
                                   zoo.model_infos(zoo.catalog()))
    claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    spec = ExperimentSpec(model="simplenet", batch_size=8, device="cpu", cache="portable", mode="max-autotune")
    note = portable.prepare(engine, spec, PROBE, tmp_path, {}, signing.load(cache_key_file))
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "compiled_first_call_s": 9.5,
                         "eager_first_call_s": 0.1, "detail": {"mega_cache": note}})
    at = ok(page("job", job=str(job_id)))
    text = " ".join(c.value for c in at.caption).replace("\\", "")
    assert 'differs in mode ("max-autotune" here, "default" in the bundle)' in text
