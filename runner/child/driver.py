"""The host's driver and CPU names, read without torch: the probe, calibration and the worker's host facts name them."""
import platform


def nvidia_driver() -> str | None:
    """The NVIDIA driver's version (ceilings and host facts are kept per driver), where NVML or the kernel module
    answers; read without torch."""
    try:
        import pynvml

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:
        try:
            with open("/proc/driver/nvidia/version") as f:
                return f.readline().split("Kernel Module")[-1].split()[0]
        except (OSError, IndexError):
            return None


def cpu_model() -> str:
    """The CPU's model name (a CPU job's device name), from /proc/cpuinfo where it is there."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
