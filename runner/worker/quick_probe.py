"""What a worker's children can do, read without importing torch: the installed torch's version as torch says it and
whether it was built with CUDA (its version file), triton's version (its package's metadata), and the visible GPUs
from NVML (the driver's library, through ctypes). A worker on a host it has never started on is ready with these at
once, instead of after its preloaded parent's imports and the probe (15 s on an H200 host); the real probe
(runner.worker.probe) runs in the background before the first job's child starts, and where it says otherwise the
worker publishes its answer. None where the answer could be wrong in a way that matters (visible GPUs named by UUID
or MIG instance, say)."""
from __future__ import annotations

import ctypes
import importlib.metadata
import importlib.util
import re
from pathlib import Path

from runner.child.driver import cpu_model, nvidia_driver


def probe(env: dict) -> dict | None:
    """runner.child.process.probe's answer, or None where only the real probe can tell."""
    torch_version = _torch_file("__version__") or _version("torch")
    if torch_version is None:
        return None
    built_cuda = _torch_file("cuda")
    gpus = _visible(env.get("CUDA_VISIBLE_DEVICES"))
    if gpus is None:
        return None
    cuda = bool(built_cuda) and bool(gpus)
    info = _nvml(gpus[0]) if cuda else {}
    if cuda and info is None:
        return None
    return {"torch_version": torch_version, "cuda": cuda, "device_count": len(gpus) if cuda else 0,
            "device_name": info.get("name") if cuda else None, "capability": info.get("capability") if cuda else None,
            "triton_version": _version("triton"), "cpu_name": cpu_model(), "driver": nvidia_driver() if cuda else None}


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _torch_file(name: str) -> str | None:
    """torch.version's `name`, read from torch/version.py's text: __version__ as torch says it ('2.14.1+cu130', where
    a CUDA wheel's package metadata says '2.14.1'), cuda (None: a CPU build); None where unreadable."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return None
    try:
        text = (Path(spec.origin).parent / "version.py").read_text()
    except OSError:
        return None
    found = re.search(rf"^{re.escape(name)}\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
    return found.group(1) if found else None


def _visible(value: str | None) -> list[int] | None:
    """The NVML indices of the visible GPUs (all of them when unset); None where they are named another way."""
    count = _nvml_count()
    if value is None:
        return list(range(count))
    if value.strip() in ("", "-1"):
        return []
    out = []
    for part in value.split(","):
        if not part.strip().isdigit():
            return None  # a UUID or MIG name: torch's own answer is needed
        i = int(part)
        if i >= count:
            break  # CUDA stops at the first invalid index
        out.append(i)
    return out


def _nvml_lib():
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    return lib if lib.nvmlInit() == 0 else None


def _nvml_count() -> int:
    lib = _nvml_lib()
    count = ctypes.c_uint(0)
    if lib is None or lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
        return 0
    return count.value


def _nvml(index: int) -> dict | None:
    """{"name", "capability"} of the GPU at NVML index `index`."""
    lib = _nvml_lib()
    if lib is None:
        return None
    handle, name = ctypes.c_void_p(), ctypes.create_string_buffer(96)
    major, minor = ctypes.c_int(0), ctypes.c_int(0)
    if (lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) or lib.nvmlDeviceGetName(handle, name, 96)
            or lib.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major), ctypes.byref(minor))):
        return None
    return {"name": name.value.decode(errors="replace"), "capability": f"{major.value}.{minor.value}"}

