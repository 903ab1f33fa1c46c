"""Issue 29, cache-miss forensics: a portable job whose key differs from the stored bundle's in one setting names that
setting on its job page (the note runner.worker.cache_bundle.prepare wrote, as the worker stores it in detail.mega_cache); a warm
job that compiled anyway names what differs from the nearest earlier compile on its host (db.caches.warm_nearest)."""
import pytest

from db import caches, queue
from db.models import JobStatus
from lab.spec import ExperimentSpec
from lab.sweep import SweepRequest
from runner import zoo
from runner.worker import cache_bundle, cache_key
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
    note = cache_bundle.prepare(engine, spec, PROBE, tmp_path, {}, cache_key.load(cache_key_file))
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "compiled_first_call_s": 9.5,
                         "eager_first_call_s": 0.1, "detail": {"mega_cache": note}})
    at = ok(page("job", job=str(job_id)))
    text = " ".join(c.value for c in at.caption).replace("\\", "")
    assert 'differs in mode ("max-autotune" here, "default" in the bundle)' in text


def _finish(engine, request, first_s, misses, host="gpu-box"):
    _, (job_id,), _ = queue.submit(engine, request, zoo.model_infos(zoo.catalog()))
    claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "compiled_first_call_s": first_s,
                         "eager_first_call_s": 0.1, "hostname": host, "torch_version": "2.13.0+cpu",
                         "device_name": "AMD EPYC",
                         "detail": {"cache_layers": {"fxgraph": {"hit": 0 if misses else 1, "miss": misses}}}})
    return job_id


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_warm_miss_names_what_differs_from_the_nearest_compile_on_its_host(worker):  # noqa: F811
    engine = worker
    warm = dict(model="simplenet", device="cpu", cache="warm", process_repeats=1)
    first = _finish(engine, SweepRequest(batch_sizes=[8], **warm), 9.0, 1)  # the host's cache held nothing of it
    at = ok(page("job", job=str(first)))
    text = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "No earlier warm job of simplenet had finished on gpu-box" in text
    _finish(engine, SweepRequest(batch_sizes=[8], **warm), 8.0, 1, host="other-box")  # another host: not its cache
    cold = {**warm, "cache": "cold"}
    _finish(engine, SweepRequest(batch_sizes=[8], modes=["max-autotune"], **cold), 8.0, 1)  # a fresh folder: not it
    again = _finish(engine, SweepRequest(batch_sizes=[8], modes=["max-autotune"], **warm), 9.5, 1)
    text = " ".join(c.value for c in ok(page("job", job=str(again))).caption).replace("\\", "")
    assert (f"The nearest earlier compile on gpu-box's warm cache, job #{first}, differs in 1 part: "
            'mode ("max-autotune" here, "default" there)') in text
    same = _finish(engine, SweepRequest(batch_sizes=[8], modes=["max-autotune"], **warm), 9.4, 2)
    text = " ".join(c.value for c in ok(page("job", job=str(same))).caption).replace("\\", "")
    assert f"Job #{again} compiled these same settings with the same torch on gpu-box before" in text


def test_the_job_page_names_the_launch_settings_its_process_picked(worker):  # noqa: F811
    """A GPU job's record keeps the autotuner picks its process made (runner.child.capture.autotune_picks); its job
    page names them under Caches, as text: a kernel name with markup characters is not rendered as markup."""
    engine = worker
    _, (job_id,), _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu",
                                                        process_repeats=1), zoo.model_infos(zoo.catalog()))
    claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    picks = {"count": 2, "picks": {"ji/cjivfv5kadjx": {"XBLOCK": 1024, "num_warps": 4, "num_stages": 1},
                                   "**k2**/<b>x</b>": {"XBLOCK": 64, "num_warps": 2}}}
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 0.68, "compiled_ms": 0.34, "speedup": 2.0, "compiled_first_call_s": 2.7,
                         "eager_first_call_s": 0.02, "detail": {"autotune_picks": picks}})
    at = ok(page("job", job=str(job_id)))
    (line,) = [c.value for c in at.caption if "autotuner picked" in c.value]
    text = line.replace("\\", "")
    assert "launch settings of 2 kernels" in text and "ji/cjivfv5kadjx: XBLOCK 1024, num_warps 4, num_stages 1" in text
    assert "\\*\\*k2\\*\\*" in line and "\\<b\\>" in line  # escaped: never bold, never a tag
