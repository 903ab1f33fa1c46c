"""Kubernetes: workers as an Indexed Job, one GPU per pod (the device plugin's `nvidia.com/gpu`), rendered as a plain
manifest and applied, where asked, with the official `kubernetes` client (optional: `pip install kubernetes`). The
database URL comes from a Secret, never from the manifest; the cache signing key, where the lab uses one, from another
Secret mounted read-only for the worker's user alone (0400). Each pod runs `runner work --drain --idle-exit S` and
knows its pod, node and index (the downward API), which it publishes as its scheduler identity.

Not run against a real cluster here: the manifest is checked against the client's own models (tests/cluster)."""
from __future__ import annotations

import time

from runner.launch.config import LaunchConfig, Pool
from runner.launch.identity import JOB_ENV, NODE_ENV, POD_ENV, POOL_ENV

KEY_DIR = "/etc/compile-lab"  # where the cache key Secret is mounted
KEY_NAME = "cache.key"  # its key in the Secret, and the file's name
LABEL = "app.kubernetes.io/name"
POOL_LABEL = "compile-lab/pool"


class KubernetesError(RuntimeError):
    """The manifest cannot be made (no image) or applied (no client, no cluster, refused)."""


def job_name(cfg: LaunchConfig, pool: Pool, now: float | None = None) -> str:
    """A new name per launch (a Job's pods cannot be changed once it exists): NAME-POOL-YYYYMMDD-HHMMSS."""
    return f"{cfg.job_name(pool)}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime(now))}"[:63]


def manifest(cfg: LaunchConfig, pool: Pool, workers: int, grace_s: float | None = None,
             name: str | None = None) -> dict:
    """A batch/v1 Job of `workers` pods, Indexed, each a worker with one GPU (a cuda pool) that exits once idle."""
    k = cfg.kubernetes
    if not k.image:
        raise KubernetesError(f"{cfg.source}: [kubernetes] image is not set (an image holding the project and torch)")
    if workers < 1:
        raise KubernetesError(f"at least one worker, got {workers}")
    name = name or job_name(cfg, pool)
    grace = cfg.worker.grace_s if grace_s is None else grace_s
    labels = {LABEL: "compile-lab", POOL_LABEL: pool.name}
    env = [{"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": k.database_secret, "key": k.database_key}}},
           {"name": POOL_ENV, "value": pool.name}, {"name": JOB_ENV, "value": name},
           {"name": POD_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": NODE_ENV, "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    env += [{"name": key, "value": value} for key, value in sorted(cfg.worker.env.items())]
    mounts = [{"name": "home", "mountPath": k.home}]
    volumes: list[dict] = [{"name": "home", "emptyDir": {}}]
    if k.cache_key_secret:
        env.append({"name": "COMPILE_LAB_CACHE_KEY_FILE", "value": f"{KEY_DIR}/{KEY_NAME}"})
        mounts.append({"name": "cache-key", "mountPath": KEY_DIR, "readOnly": True})
        volumes.append({"name": "cache-key", "secret": {"secretName": k.cache_key_secret, "defaultMode": 0o400,
                                                         "items": [{"key": KEY_NAME, "path": KEY_NAME}]}})
    limits = {k.gpu_resource: "1"} if pool.device == "cuda" else {}
    requests = {}
    for resource, value in (("cpu", k.cpu), ("memory", k.memory)):
        if value:
            limits[resource] = requests[resource] = str(value)
    container = {
        "name": "worker", "image": k.image,
        "command": [k.python, "-m", "runner", "work", "--drain", "--idle-exit", f"{cfg.idle_exit_s:g}",
                    "--grace", f"{grace:g}", "--home", k.home, *cfg.worker.args],
        "env": env, "volumeMounts": mounts, "resources": {"limits": limits, **({"requests": requests} if requests
                                                                              else {})},
    }
    if k.workdir:
        container["workingDir"] = k.workdir
    pod = {"restartPolicy": "Never", "containers": [container], "volumes": volumes,
           # the worker hands its job back within its grace; the kubelet's SIGKILL comes after this
           "terminationGracePeriodSeconds": int(grace) + 15}
    if k.node_selector:
        pod["nodeSelector"] = dict(k.node_selector)
    if k.service_account:
        pod["serviceAccountName"] = k.service_account
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": k.namespace, "labels": labels},
        "spec": {"completionMode": "Indexed", "completions": workers, "parallelism": workers,
                 "backoffLimit": workers, "ttlSecondsAfterFinished": k.ttl_s,
                 "template": {"metadata": {"labels": labels}, "spec": pod}},
    }


def _client():
    try:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
    except ImportError:
        raise KubernetesError("the kubernetes client is not installed: pip install kubernetes") from None
    try:
        config.load_incluster_config()
    except ConfigException:
        try:
            config.load_kube_config()
        except (ConfigException, OSError) as e:
            raise KubernetesError(f"no cluster to talk to: {e}") from None
    return client


def active_workers(cfg: LaunchConfig, pool: Pool) -> int:
    """Pods of this pool's Jobs that have not ended (pending or running), as the cluster counts them."""
    client = _client()
    jobs = client.BatchV1Api().list_namespaced_job(
        cfg.kubernetes.namespace, label_selector=f"{LABEL}=compile-lab,{POOL_LABEL}={pool.name}")
    return sum((j.status.active or 0) for j in jobs.items)


def apply(body: dict) -> str:
    """Create the Job with the official client (in-cluster credentials, else ~/.kube/config); its name."""
    client = _client()
    try:
        made = client.BatchV1Api().create_namespaced_job(body["metadata"]["namespace"], body)
    except client.exceptions.ApiException as e:
        raise KubernetesError(f"the cluster refused the Job: {e.status} {e.reason}") from None
    return made.metadata.name
