"""What the preloaded parent (runner.child.zygote) asks NVML before it preloads, and how torch is answered from it
while it does: torch's runtime device count would mark every later fork as unable to use CUDA, so "is there a GPU?"
is asked of NVML instead, once, by a forked helper, and torch's two raw NVML readers are answered from that."""
from __future__ import annotations

import contextlib
import json
import os


def facts() -> dict | None:
    """NVML's device count and GPU UUIDs (what torch's NVML-based check reads), asked by a forked helper while this
    process has its main thread alone: nvmlInit starts a thread that outlives nvmlShutdown, and with it every job's
    fork would be a fork of a multi-threaded process (a lock that thread holds at the fork stays held in the child;
    Python 3.12 warns at each fork). None where there is no NVML (no NVIDIA driver): torch then finds none either."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper: NVML through ctypes, nothing imported
        try:
            os.close(r)
            os.write(w, json.dumps(_ask()).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as answer:
        text = answer.read()
    os.waitpid(pid, 0)
    try:
        said = json.loads(text)
    except ValueError:  # the helper died: torch asks NVML itself, as it would without us
        return None
    return said if isinstance(said, dict) else None


def _ask() -> dict | None:
    import ctypes

    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    count = ctypes.c_int(-1)
    if nvml.nvmlInit() != 0 or nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
        return None
    uuids = []
    for i in range(count.value):
        handle, buf = ctypes.c_void_p(), ctypes.create_string_buffer(96)
        if nvml.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) or nvml.nvmlDeviceGetUUID(handle, buf, 96):
            return {"count": count.value, "uuids": None}
        uuids.append(buf.raw.decode("ascii").strip("\0"))
    return {"count": count.value, "uuids": uuids}


@contextlib.contextmanager
def answered(torch, facts: dict | None):
    """While preloading, torch's NVML questions answered from `facts` instead of NVML itself (torch.cuda's two raw
    NVML readers, which its NVML-based device count calls); left alone where there are no facts or no readers."""
    cuda = torch.cuda
    readers = ("_raw_device_count_nvml", "_raw_device_uuid_nvml")
    if facts is None or not all(hasattr(cuda, name) for name in readers):
        yield
        return
    saved = {name: getattr(cuda, name) for name in readers}
    cuda._raw_device_count_nvml = lambda: facts["count"]
    cuda._raw_device_uuid_nvml = lambda: list(facts["uuids"]) if facts["uuids"] is not None else None
    try:
        yield
    finally:
        for name, reader in saved.items():
            setattr(cuda, name, reader)
