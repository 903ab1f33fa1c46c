"""How a worker is started: `runner work`'s flags, as one record."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from runner.worker.cache_key import Signer


@dataclass
class WorkerConfig:
    db_url: str | None = None
    home: Path = Path("data")  # job folders (spec, result, log) and the warm compile cache
    gpu: str | None = None  # pinned with CUDA_VISIBLE_DEVICES for the probe and every child
    lease_s: float = 60.0  # a job whose lease is not renewed for this long is taken back by other workers
    heartbeat_s: float = 2.0  # at most; a third of the lease when the lease is short
    poll_s: float = 1.0
    grace_s: float = 30.0
    models_dirs: list[str] = field(default_factory=list)
    max_jobs: int | None = None
    drain: bool = False
    idle_exit_s: float = 0.0  # draining: exit once nothing was claimable this long (a launched worker scales to zero)
    keep_job_dirs: bool = True
    spawn: str = "fork"  # fork: from the preloaded parent (runner/child/zygote.py); fresh: a new interpreter per job
    calibrate: bool = True  # measure a GPU's ceilings once (runner/worker/ceilings.py) if the database has none
    threads: int | None = None  # torch's intra-op threads in every child; None: the CPUs this worker may use
    signer: Signer | None = field(default=None, repr=False)  # signs and checks cache bundles; None: no portable cache
    model_imports: list[str] = field(default_factory=list)  # a lab's models by import path (runner.worker.model_offer)
    families: bool = True  # offer hf:* and timm:* where the packages are installed
