"""The launcher's Indexed Job for 2 GPU workers, read back through the official kubernetes client's own models (its
ApiClient turns the manifest into a V1Job, dropping any key the API does not know: serialised again, it must be the
manifest unchanged). No cluster: the manifest is never applied here."""
import pytest
import yaml

from runner.launch import kubernetes
from runner.launch.config import from_dict
from tests.conftest import run_cli, submit

client = pytest.importorskip("kubernetes.client", reason="the kubernetes client is not installed (requirements-dev)")
CONFIG = {"idle_exit_s": 120, "worker": {"args": ["--models-dir", "/models"], "env": {"COMPILE_LAB_FAMILIES": "0"},
                                         "grace_s": 20},
          "kubernetes": {"namespace": "lab", "image": "registry.example.org/compile-lab:2.13-cu128",
                         "database_secret": "lab-db", "database_key": "url", "cache_key_secret": "lab-cache-key",
                         "cpu": "8", "memory": "64Gi", "node_selector": {"nvidia.com/gpu.product": "H100"}}}


def as_v1job(body: dict):
    """The client's own reading of a manifest (its ApiClient.deserialize, as for an API server's answer)."""
    import json

    api = client.ApiClient()
    try:  # kubernetes >= 35: (text, type, content type)
        return api.deserialize(json.dumps(body), "V1Job", "application/json")
    except TypeError:  # earlier: an object with .data
        return api.deserialize(type("Answer", (), {"data": json.dumps(body)})(), "V1Job")


def test_indexed_job_for_two_gpu_workers_is_what_the_client_reads():
    cfg = from_dict(CONFIG)
    body = kubernetes.manifest(cfg, cfg.pools[0], 2, name="compile-lab-cuda-20260101-000000")
    job = as_v1job(body)
    assert isinstance(job, client.V1Job)
    assert client.ApiClient().sanitize_for_serialization(job) == body  # no key the API would drop
    spec = job.spec
    assert (spec.completion_mode, spec.completions, spec.parallelism) == ("Indexed", 2, 2)
    pod = spec.template.spec
    (worker,) = pod.containers
    assert pod.restart_policy == "Never" and pod.termination_grace_period_seconds > 20
    assert worker.resources.limits == {"nvidia.com/gpu": "1", "cpu": "8", "memory": "64Gi"}  # one GPU per pod
    assert worker.command[:5] == ["python", "-m", "runner", "work", "--drain"]
    assert worker.command[5:9] == ["--idle-exit", "120", "--grace", "20"] and "--models-dir" in worker.command
    env = {e.name: e for e in worker.env}
    ref = env["DATABASE_URL"].value_from.secret_key_ref  # the URL from the Secret, never in the manifest
    assert (ref.name, ref.key) == ("lab-db", "url") and env["DATABASE_URL"].value is None
    assert env["COMPILE_LAB_POD_NAME"].value_from.field_ref.field_path == "metadata.name"
    assert env["COMPILE_LAB_NODE_NAME"].value_from.field_ref.field_path == "spec.nodeName"
    assert env["COMPILE_LAB_CACHE_KEY_FILE"].value == "/etc/compile-lab/cache.key"
    key = next(v for v in pod.volumes if v.name == "cache-key").secret
    assert key.secret_name == "lab-cache-key" and key.default_mode == 0o400  # the worker's user alone
    assert pod.node_selector == {"nvidia.com/gpu.product": "H100"}


def test_a_cpu_pool_asks_for_no_gpu_and_an_image_is_required():
    cfg = from_dict({**CONFIG, "pool": [{"name": "cpu", "device": "cpu"}]})
    limits = as_v1job(kubernetes.manifest(cfg, cfg.pools[0], 1)).spec.template.spec.containers[0].resources.limits
    assert "nvidia.com/gpu" not in limits
    with pytest.raises(kubernetes.KubernetesError, match="image is not set"):
        kubernetes.manifest(from_dict({}), from_dict({}).pools[0], 2)


@pytest.mark.subprocess
def test_launch_kubernetes_renders_as_many_pods_as_the_queue_needs(db_url, tmp_path):
    config = tmp_path / "cluster.toml"
    config.write_text('max_workers = 4\n[kubernetes]\nimage = "lab:1"\n')
    submit(db_url, "--model", "tiny", "--batch", "2,4", "--device", "cuda")  # two GPU jobs queued
    done = run_cli("launch", "kubernetes", "--config", str(config), "--db", db_url)
    assert done.returncode == 0, done.stderr
    job = as_v1job(yaml.safe_load(done.stdout))
    assert job.spec.completions == 2 and job.metadata.name.startswith("compile-lab-cuda-")
    bad = run_cli("launch", "kubernetes", "--config", str(config), "--db", db_url, "--pool", "tpu")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --pool tpu: no such pool")
