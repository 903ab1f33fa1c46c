"""Does the CPU a process runs on set a launch-bound model's latency on this GPU host? (issue 23: 4 of 12 simplenet
processes on one H100 host ran eager at 0.157-0.198 ms instead of 0.081-0.097 ms, no cause recorded.) Per CPU, one
fresh process pinned there (taskset) times simplenet bs 32's eager calls (synchronous, median of 2000);
then six unpinned processes say where they ran. Prints the host's layout (lscpu, the GPU's NUMA node) and a table.

    python -m bench.gpu_cpu_placement [--cpus 0-15] [--model simplenet --batch 32]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r'''
import json, os, time, torch
from runner import zoo
from runner.child.build import make_step
entry = zoo.resolve(MODEL); module = zoo.load_module(entry)
params = {p.name: p.default for p in entry.info.params}
torch.manual_seed(0)
model = module.build(**params).cuda().eval()
inputs = tuple(t.cuda() for t in module.example_inputs(BATCH, **params))
steps = {"eager": make_step(model, model.parameters(), False, False, device_type="cuda")}
out = {}
for name, step in steps.items():
    for _ in range(200):
        step(inputs)
    torch.cuda.synchronize()
    times = []
    for _ in range(2000):
        t0 = time.perf_counter(); step(inputs); torch.cuda.synchronize(); times.append(time.perf_counter() - t0)
    times.sort(); out[name + "_us"] = round(times[len(times) // 2] * 1e6, 1)
out["cpu_end"] = int(open("/proc/self/stat").read().rsplit(") ", 1)[1].split()[36])
print(json.dumps(out))
'''


def cpus(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--cpus", default=f"0-{os.cpu_count() - 1}")
    p.add_argument("--model", default="simplenet")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--passes", type=int, default=1, help="over the CPUs, alternating order (is a slow CPU slow again?)")
    args = p.parse_args()
    for cmd in (["lscpu"], ["nvidia-smi", "topo", "-m"]):
        done = subprocess.run(cmd, capture_output=True, text=True)
        keep = [ln for ln in done.stdout.splitlines() if cmd[0] != "lscpu" or any(
            k in ln for k in ("Model name", "Thread(s) per core", "Core(s) per socket", "Socket(s)", "NUMA", "MHz"))]
        print("\n".join(keep))
    for dev in os.listdir("/sys/bus/pci/devices"):
        try:
            if open(f"/sys/bus/pci/devices/{dev}/vendor").read().strip() == "0x10de":
                print(f"GPU {dev}: numa_node {open(f'/sys/bus/pci/devices/{dev}/numa_node').read().strip()}, "
                      f"local_cpulist {open(f'/sys/bus/pci/devices/{dev}/local_cpulist').read().strip()}")
        except OSError:
            pass
    code = CHILD.replace("MODEL", repr(args.model)).replace("BATCH", str(args.batch))
    print(f"{'placement':<14} {'eager us':>9}  ran on")
    order = cpus(args.cpus)
    runs = [("cpu %d" % c, ["taskset", "-c", str(c)]) for k in range(args.passes) for c in order[::1 - 2 * (k % 2)]]
    runs += [("unpinned", [])] * 6
    for label, prefix in runs:
        done = subprocess.run(prefix + [sys.executable, "-c", code], capture_output=True, text=True)
        try:
            r = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            print(f"{label:<14} failed: {(done.stderr.strip().splitlines() or ['?'])[-1][:120]}", flush=True)
            continue
        print(f"{label:<14} {r['eager_us']:>9}  cpu {r['cpu_end']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
