"""The launcher's one config file (TOML): where workers run and what they are given, per scheduler. Defaults live
here, on the dataclasses; an unknown key is refused with its name, a bad value with what it should be.

    max_workers = 8                  # at most this many workers per pool, started or waiting in the scheduler
    idle_exit_s = 300                # a worker with nothing to claim this long exits: the GPUs go back
    [worker]                         # every worker: its Python, folder, --home and `runner work` flags
    python = "/shared/lab/.venv/bin/python"
    env = { COMPILE_LAB_CACHE_KEY_FILE = "/home/lab/.config/compile-lab/cache.key" }
    [slurm]                          # sbatch's options
    partition = "gpu"; account = "lab"; gres = "gpu:1"; time_limit = "04:00:00"
    [[pool]]                         # optional: one pool of workers per device kind and torch (default: cuda)
    name = "cuda-2.14"; device = "cuda"; torch = "2.14"; python = "/shared/venv214/bin/python"

docs/operations.md ("On a cluster") has the whole file."""
from __future__ import annotations

import os
import re
import sys
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from lab.spec import DEVICES

CONFIG_ENV = "COMPILE_LAB_CLUSTER_CONFIG"  # the file `runner launch` reads without --config (and the dashboard's)
PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?")  # a scheduler job name and a Kubernetes name part
_SLURM_TIME = re.compile(r"([0-9]+-)?[0-9]+(:[0-9]{1,2}){0,2}|UNLIMITED|INFINITE", re.I)


class ConfigError(ValueError):
    """The launcher's config file is missing, is not TOML, or holds an unknown key or a bad value."""


@dataclass(frozen=True)
class WorkerSettings:
    """What every launched worker runs: `python -m runner work --drain --idle-exit S` in `workdir` with `args`."""

    python: str = sys.executable  # on the nodes: the same path, holding the project and its torch
    workdir: str = str(PROJECT_ROOT)  # the project folder on the nodes (a shared file system, or the same install)
    home: str = "data/cluster"  # the workers' --home (relative: to workdir); $VARS expand on the node
    args: tuple[str, ...] = ()  # more `runner work` flags: --models-dir DIR, --lease S, --threads N, ...
    env: dict = field(default_factory=dict)  # the workers' environment (names: letters, digits, _)
    env_file: str | None = None  # sourced on the node before the worker starts (secrets: DATABASE_URL=..., mode 600)
    grace_s: float = 25.0  # runner work --grace; on Slurm also kept under the cluster's KillWait


@dataclass(frozen=True)
class SlurmSettings:
    """sbatch's options for one array task, a worker each."""

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    gres: str | None = None  # default: gpu:1 for a cuda pool, none for a cpu pool
    time_limit: str | None = None  # sbatch --time (minutes, or [D-]HH:MM:SS); None: the partition's default
    cpus_per_task: int | None = None
    mem: str | None = None  # sbatch --mem, e.g. 32G
    log_dir: str = "data/slurm-logs"  # the workers' output files (relative: to the worker's workdir)
    extra: tuple[str, ...] = ()  # any other sbatch flags, e.g. --constraint=h100


@dataclass(frozen=True)
class KubernetesSettings:
    """An Indexed Job per launch, one GPU per pod (runner.launch.kubernetes)."""

    namespace: str = "default"
    image: str | None = None  # holds the project and its torch; required to render
    python: str = "python"  # in the image
    workdir: str | None = None  # the project folder in the image; None: the image's WORKDIR
    home: str = "/var/lib/compile-lab"  # the workers' --home: an emptyDir per pod
    database_secret: str = "compile-lab-database"  # a Secret whose key `database_key` holds the DATABASE_URL
    database_key: str = "url"
    cache_key_secret: str | None = None  # a Secret holding the cache signing key (key `cache.key`), mounted 0400
    gpu_resource: str = "nvidia.com/gpu"
    cpu: str | None = None  # requests and limits per pod, e.g. "8"
    memory: str | None = None  # e.g. "32Gi"
    node_selector: dict = field(default_factory=dict)
    service_account: str | None = None
    ttl_s: int = 3600  # the finished Job is deleted after this long


@dataclass(frozen=True)
class Pool:
    """Workers of one kind: a device and a torch. A queued job goes to the first pool of its device whose torch its
    pin matches ("any" matches every pool)."""

    name: str = "cuda"
    device: str = "cuda"
    torch: str | None = None  # the torch its Python runs ("2.14" or "2.14.1+cu128"); None: it serves unpinned jobs
    max_workers: int | None = None  # default: the file's max_workers
    python: str | None = None  # default: [worker] python
    slurm: SlurmSettings | None = None  # default: [slurm], with this pool's own keys over it


@dataclass(frozen=True)
class LaunchConfig:
    name: str = "compile-lab"  # scheduler job names: NAME-POOL (the launcher counts its jobs by them)
    max_workers: int = 4
    idle_exit_s: float = 300.0
    interval_s: float = 30.0  # --watch: how often the queue and the scheduler are looked at
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    slurm: SlurmSettings = field(default_factory=SlurmSettings)
    kubernetes: KubernetesSettings = field(default_factory=KubernetesSettings)
    pools: tuple[Pool, ...] = (Pool(),)
    source: str = "defaults"

    def pool_slurm(self, pool: Pool) -> SlurmSettings:
        settings = pool.slurm or self.slurm
        if settings.gres is None and pool.device == "cuda":
            settings = replace(settings, gres="gpu:1")
        return settings

    def pool_max(self, pool: Pool) -> int:
        return pool.max_workers if pool.max_workers is not None else self.max_workers

    def job_name(self, pool: Pool) -> str:
        return f"{self.name}-{pool.name}"


def config_path(given: str | None) -> Path:
    """--config, else COMPILE_LAB_CLUSTER_CONFIG; a ConfigError if neither names a file."""
    text = given or os.environ.get(CONFIG_ENV)
    if not text:
        raise ConfigError(f"no config file: give --config FILE or set {CONFIG_ENV} (docs/operations.md, "
                          "\"On a cluster\")")
    return Path(text).expanduser()


def load(path: str | Path) -> LaunchConfig:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not TOML: {e}") from None
    return from_dict(data, str(path))


def from_dict(data: dict, source: str = "config") -> LaunchConfig:
    top = {f.name for f in fields(LaunchConfig)} - {"pools", "source"}
    _known(data, top | {"pool"}, source)
    slurm = _settings(SlurmSettings, data.get("slurm", {}), f"{source}: [slurm]")
    kwargs = {k: data[k] for k in ("name", "max_workers", "idle_exit_s", "interval_s") if k in data}
    cfg = LaunchConfig(**kwargs, worker=_settings(WorkerSettings, data.get("worker", {}), f"{source}: [worker]"),
                       slurm=slurm, source=source,
                       kubernetes=_settings(KubernetesSettings, data.get("kubernetes", {}), f"{source}: [kubernetes]"))
    pools = tuple(_pool(p, slurm, f"{source}: [[pool]] {i + 1}") for i, p in enumerate(data.get("pool", []))) or (
        Pool(),)
    cfg = replace(cfg, pools=pools)
    _check(cfg, source)
    return cfg


def _pool(data, slurm: SlurmSettings, where: str) -> Pool:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a table")
    _known(data, {f.name for f in fields(Pool)}, where)
    for f in fields(Pool):
        if f.name in data and f.name != "slurm" and not _fits(data[f.name], f.type):
            raise ConfigError(f"{where}: {f.name} must be {_WORDS[f.type]}, got {data[f.name]!r}")
    own = data.get("slurm")
    settings = None if own is None else _settings(SlurmSettings, own, f"{where} slurm", base=slurm)
    return Pool(**{**{k: v for k, v in data.items() if k != "slurm"}, "slurm": settings})


def _settings(kind, data, where: str, base=None):
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a table")
    _known(data, {f.name for f in fields(kind)}, where)
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    for f in fields(kind):
        if f.name in values and not _fits(values[f.name], f.type):
            raise ConfigError(f"{where}: {f.name} must be {_WORDS[f.type]}, got {values[f.name]!r}")
    return replace(base, **values) if base is not None else kind(**values)


_WORDS = {"str": "a string", "str | None": "a string", "int": "a whole number", "int | None": "a whole number",
          "float": "a number", "dict": "a table", "tuple[str, ...]": "a list of strings"}


def _fits(value, annotation: str) -> bool:
    """A TOML value of the type a settings field is annotated with (the annotations are strings here)."""
    if annotation.startswith("tuple"):
        return isinstance(value, tuple) and all(isinstance(x, str) for x in value)
    if isinstance(value, bool):
        return False
    return {"str": isinstance(value, str), "int": isinstance(value, int), "float": isinstance(value, (int, float)),
            "dict": isinstance(value, dict)}[annotation.split(" |")[0]]


def _known(data: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(allowed))})")


def _check(cfg: LaunchConfig, source: str) -> None:
    """Each value as a person would get it wrong: one message naming the key."""
    if not isinstance(cfg.name, str) or not _NAME.fullmatch(cfg.name):
        raise ConfigError(f"{source}: name must be lower-case letters, digits and '-' (got {cfg.name!r})")
    for key in ("max_workers", "idle_exit_s", "interval_s"):
        value = getattr(cfg, key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < (1 if key != "idle_exit_s" else 0):
            raise ConfigError(f"{source}: {key} must be a number{' of 1 or more' if key != 'idle_exit_s' else ''}, "
                              f"got {value!r}")
    if isinstance(cfg.max_workers, float):
        raise ConfigError(f"{source}: max_workers must be a whole number, got {cfg.max_workers!r}")
    bad_env = [k for k in cfg.worker.env if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(k))]
    if bad_env or not all(isinstance(v, str) for v in cfg.worker.env.values()):
        raise ConfigError(f"{source}: [worker] env: names must be letters, digits and _, values strings "
                          f"({bad_env[0] if bad_env else 'a value is not a string'})")
    names = [p.name for p in cfg.pools]
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: two pools are named {sorted(n for n in names if names.count(n) > 1)[0]!r}")
    for p in cfg.pools:
        if not isinstance(p.name, str) or not _NAME.fullmatch(p.name):
            raise ConfigError(f"{source}: pool name must be lower-case letters, digits and '-' (got {p.name!r})")
        if p.device not in DEVICES:
            raise ConfigError(f"{source}: pool {p.name}: device must be one of {', '.join(DEVICES)}, got {p.device!r}")
        if p.max_workers is not None and (isinstance(p.max_workers, bool) or not isinstance(p.max_workers, int)
                                          or p.max_workers < 0):
            raise ConfigError(f"{source}: pool {p.name}: max_workers must be a whole number, got {p.max_workers!r}")
        limit = cfg.pool_slurm(p).time_limit
        if limit is not None and not _SLURM_TIME.fullmatch(str(limit)):
            raise ConfigError(f"{source}: pool {p.name}: time_limit {limit!r} is not minutes or [D-]HH:MM:SS")
