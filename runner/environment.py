"""Where a result was measured: versions, device, host, and the GPU's clocks around the rounds."""
from __future__ import annotations

import os
import platform
import socket

import torch

from lab.noise import cpus_text
from runner.disturbance import my_cpus


def environment(device: str) -> dict:
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    if device == "cuda":
        name = torch.cuda.get_device_name(0)
    else:
        name = _cpu_model()
    return {"torch_version": torch.__version__, "triton_version": triton_version, "device_name": name,
            "cuda_version": torch.version.cuda, "hostname": socket.gethostname()}


def environment_detail(device: str) -> dict:
    d = {"python": platform.python_version(), "platform": platform.platform(), "cpu": _cpu_model(),
         "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
         "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
         "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn_benchmark": torch.backends.cudnn.benchmark}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        d.update(gpu_capability=f"{props.major}.{props.minor}", gpu_memory_gb=props.total_memory / 2 ** 30,
                 gpu_sms=props.multi_processor_count, gpu_uuid=str(getattr(props, "uuid", "")))
    return d


def host_state() -> dict:
    """The host around the timed rounds: load average (1, 5, 15 min), torch's intra-op threads, and how many CPUs
    this process may run on. A load above the CPUs it may use means the rounds shared cores with other work."""
    cpus = my_cpus()
    return {"loadavg": list(os.getloadavg()), "torch_threads": torch.get_num_threads(), "cpus_allowed": len(cpus),
            "affinity": cpus_text(cpus), "cpu_count": os.cpu_count()}


def gpu_state(device: str) -> dict | None:
    """SM clock, temperature and power when the rounds start and end (through NVML, where installed):
    a job that ran throttled or at idle clocks says so."""
    if device != "cuda":
        return None
    out = {}
    for key, read in (("sm_clock_mhz", torch.cuda.clock_rate), ("temperature_c", torch.cuda.temperature),
                      ("power_w", lambda: torch.cuda.power_draw() / 1000)):
        try:
            out[key] = read()
        except Exception:  # no NVML (pynvml) here, or the call is not supported: leave it out
            pass
    return out or None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
