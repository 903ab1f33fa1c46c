"""Where a forked job child's fixed costs go on a GPU, and what preloading libraries in the parent saves (issue 23,
item 5: the per-job overhead). Forks children from a parent that imported torch (as runner/child/zygote.py does), half of
them after the parent has loaded cuDNN's sub-libraries (which cuDNN 9 opens lazily at first use), alternating, and
prints each step's median:

    python -m bench.gpu_child_costs [--children 6] [-o FILE]

driver init (torch.cuda.is_available), CUDA context, the library warm-up (runner.child.build.warm_libraries), one
profiled call per side (two profiler sessions) and both in one session, and the exit: from the child's last
timestamp to the parent's waitpid returning (tearing the CUDA context down).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from bench.said import Said


def child_steps(write_fd: int) -> None:
    import torch

    from runner.child.build import warm_libraries

    out, t = {}, time.perf_counter()

    def mark(name):
        nonlocal t
        now = time.perf_counter()
        out[name] = now - t
        t = now

    torch.cuda.is_available()
    mark("driver init")
    torch.cuda.init()
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    mark("CUDA context")
    warm_libraries(torch.device("cuda"), torch.float32)
    mark("library warm-up")
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512)).cuda()
    x = torch.randn(64, 512, device="cuda")
    model(x)
    torch.cuda.synchronize()
    mark("model")
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    for _ in range(2):
        with profile(activities=acts) as prof:
            model(x)
            torch.cuda.synchronize()
        prof.profiler.kineto_results.events()
    mark("profiler, 2 sessions")
    with profile(activities=acts) as prof:
        model(x)
        torch.cuda.synchronize()
        model(x)
        torch.cuda.synchronize()
    prof.profiler.kineto_results.events()
    mark("profiler, 1 session")
    out["exit at"] = time.time()
    os.write(write_fd, (json.dumps(out) + "\n").encode())
    os._exit(0)


def fork_one() -> dict:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            child_steps(w)
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(1)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.waitpid(pid, 0)
    exited = time.time()
    os.close(r)
    out = json.loads(data)
    out["exit"] = exited - out.pop("exit at")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--children", type=int, default=6)
    ap.add_argument("-o", "--out")
    args = ap.parse_args()
    from runner.child import preload, zygote

    opens = preload.cudnn_libraries
    preload.cudnn_libraries = list  # the parent as before it opened cuDNN's libraries: the "plain" children
    zygote._preload()  # what the worker's preloaded parent imports, CUDA untouched
    preload.cudnn_libraries = opens
    import torch
    rows = {"plain": [], "cuDNN preloaded": []}
    fork_one()  # the first child reads the libraries from disk: discarded
    for _ in range(args.children):
        rows["plain"].append(fork_one())
    started = time.perf_counter()
    opened = preload.cudnn_libraries()  # what the worker's preloaded parent now opens
    preload_s = time.perf_counter() - started
    for _ in range(args.children):
        rows["cuDNN preloaded"].append(fork_one())
    steps = list(rows["plain"][0])
    say = Said()  # each child's steps were timed in the child (it may not touch CUDA in this parent)
    say(f"torch {torch.__version__}")
    say(f"parent opened {len(opened)} cuDNN libraries in {preload_s:.3f} s: {', '.join(opened)}")
    say(f"{'step (median of ' + str(args.children) + ' children), s':44s}" + "".join(f"{k:>18s}" for k in rows))
    for s in steps:
        say(f"{s:44s}" + "".join(f"{statistics.median(r[s] for r in v):18.3f}" for v in rows.values()))
    say.write(Path(args.out) if args.out else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
