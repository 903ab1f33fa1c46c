"""Where a result was measured: versions, device, host, and the GPU's clocks around the rounds."""
from __future__ import annotations

import os
import platform
import socket

import torch

from lab.noise import cpus_text
from runner.child.disturbance import my_cpus
from runner.child.driver import cpu_model


def environment(device: str) -> dict:
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    if device == "cuda":
        name = torch.cuda.get_device_name(0)
    else:
        name = cpu_model()
    return {"torch_version": torch.__version__, "triton_version": triton_version, "device_name": name,
            "cuda_version": torch.version.cuda, "hostname": socket.gethostname()}


def environment_detail(device: str) -> dict:
    d = {"python": platform.python_version(), "platform": platform.platform(), "cpu": cpu_model(),
         "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
         "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
         "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn_benchmark": torch.backends.cudnn.benchmark}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        d.update(gpu_capability=f"{props.major}.{props.minor}", gpu_memory_gb=props.total_memory / 2 ** 30,
                 gpu_sms=props.multi_processor_count, gpu_uuid=str(getattr(props, "uuid", "")), gpu_numa_node=gpu_node())
    return d


def host_state() -> dict:
    """The host around the timed rounds: load average (1, 5, 15 min), torch's intra-op threads, and how many CPUs
    this process may run on. A load above the CPUs it may use means the rounds shared cores with other work."""
    cpus = my_cpus()
    out = {"loadavg": list(os.getloadavg()), "torch_threads": torch.get_num_threads(), "cpus_allowed": len(cpus),
           "affinity": cpus_text(cpus), "cpu_count": os.cpu_count()}
    cpu = _last_cpu()
    if cpu is not None:  # where the timing thread ran (two processes of one configuration can land apart)
        out["cpu"], out["cpu_node"] = cpu, _cpu_node(cpu)
    return out


def _last_cpu() -> int | None:
    """The CPU this thread last ran on (/proc/thread-self/stat, field 39), None where unreadable."""
    try:
        with open("/proc/thread-self/stat", "rb") as f:
            after_name = f.read().decode(errors="replace").rpartition(")")[2].split()
        return int(after_name[36])
    except (OSError, ValueError, IndexError):
        return None


def _cpu_node(cpu: int) -> int | None:
    """The NUMA node that holds `cpu` (/sys/devices/system/cpu/cpuN/nodeM), None where the host does not say."""
    try:
        names = os.listdir(f"/sys/devices/system/cpu/cpu{cpu}")
    except OSError:
        return None
    nodes = [int(n[4:]) for n in names if n.startswith("node") and n[4:].isdigit()]
    return nodes[0] if nodes else None


def gpu_node() -> int | None:
    """The NUMA node the GPU hangs off (its PCI device's numa_node), None where unknown (-1: the host has one)."""
    try:
        props = torch.cuda.get_device_properties(0)
        bus = f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
        with open(f"/sys/bus/pci/devices/{bus}/numa_node") as f:
            return int(f.read().strip())
    except (AttributeError, OSError, ValueError, RuntimeError):
        return None


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

