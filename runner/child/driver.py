"""The NVIDIA driver's version, read without torch: the probe, calibration and the worker's host facts name it."""


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
