"""Measure a device's ceilings once (runs in a child process): device-to-device copy bandwidth and a
large matrix product per dtype, on random data (never zeros: they run faster than real data)."""
from __future__ import annotations

import time

import torch

from runner.child.stats import percentile

SIZES = {"cuda": {"copy_bytes": 1 << 30, "matmul_n": 8192, "reps": 20},
         "cpu": {"copy_bytes": 1 << 28, "matmul_n": 2048, "reps": 5}}
ENOUGH_MS = 50.0  # a matrix product this long is large enough to show the unit's rate


def _time_ms(fn, device: str, reps: int) -> float:
    fn()  # warm-up: handles, kernels, clocks
    fn()
    times = []
    for _ in range(reps):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return percentile(times, 50)


def calibrate(device: str) -> dict:
    size = SIZES[device]
    dev = torch.device("cuda", 0) if device == "cuda" else torch.device("cpu")
    n_floats = size["copy_bytes"] // 4
    src = torch.randn(n_floats, device=dev)
    dst = torch.empty_like(src)
    copy_ms = _time_ms(lambda: dst.copy_(src), device, size["reps"])
    copy_gbps = 2 * size["copy_bytes"] / (copy_ms / 1e3) / 1e9  # bytes read + bytes written
    del src, dst
    matmul = {}
    for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16), ("float16", torch.float16)):
        n = 256  # grow until one product takes ENOUGH_MS or n reaches the device's size
        while True:
            a = torch.randn(n, n, device=dev).to(dtype)
            b = torch.randn(n, n, device=dev).to(dtype)
            ms = _time_ms(lambda: torch.mm(a, b), device, 1)
            if ms >= ENOUGH_MS or n >= size["matmul_n"]:
                break
            n *= 2
        ms = _time_ms(lambda: torch.mm(a, b), device, size["reps"])
        matmul[name] = 2 * n ** 3 / (ms / 1e3) / 1e12
    from runner.child.driver import nvidia_driver
    from runner.child.environment import environment

    name = environment(device)["device_name"]  # the same name results carry
    return {"device": device, "device_name": name, "copy_gbps": copy_gbps, "matmul_tflops": matmul,
            "torch_version": torch.__version__, "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
            "driver": nvidia_driver() if device == "cuda" else None}
