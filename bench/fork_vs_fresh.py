"""Where a forked job's compiled first call differs from a fresh process's: the same plain job (bench/plain_job.py)
run in a fresh interpreter, and forked from a parent that preloaded what the worker's preloaded parent does
(runner.child.zygote._preload), with and without gc.freeze() before the fork, and with the child's heap made its own
before the job as the worker's children do (runner.child.prewarm.own_heap), and that heap then put in transparent
huge pages (huge_heap), as a fresh heap may be. Repeats alternate the five.

    python -m bench.fork_vs_fresh --device cuda --model simplenet:32 --model complexnet:32 --repeat 3 [-o FILE]

Prints, per model and way, the compiled first call's median [min, max], each process's steady-state latencies, the
collector's full collections in the first call, and its parts' medians
(runner.child.capture.introspect.compile_breakdown). No worker, no database: only how the child process came to be differs.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.sweep_overhead import emit, median

ROOT = Path(__file__).resolve().parent.parent
WAYS = ("fresh", "forked", "forked + gc.freeze", "forked + own heap", "forked + own + huge")
# own heap: runner.child.prewarm.own_heap; + huge: then huge_heap below (its memory collapsed into huge pages)


def job_argv(model: str, batch: int, device: str, mode: str = "default", iters: int = 3) -> list[str]:
    return ["--model", model, "--batch", str(batch), "--mode", mode, "--dynamic", "false", "--device", device,
            "--iters", str(iters)]


def caches(folder: Path) -> dict:
    return {"TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"), "TRITON_CACHE_DIR": str(folder / "triton")}


def fresh(argv: list[str], folder: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "bench.plain_job", *argv], cwd=ROOT, env={**os.environ, **caches(folder)},
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


HUGEPAGE, COLLAPSE = 14, 25  # MADV_HUGEPAGE, MADV_COLLAPSE (Linux 6.1+)


def huge_heap() -> int | None:
    """Put this process's private writable mappings (runner.child.prewarm's reading of them) in transparent huge
    pages, as a fresh interpreter's heap lies where the kernel gives them to every process (`always`): a fork's
    copy-on-write copies are small pages. The bytes collapsed; None where the kernel cannot (no MADV_COLLAPSE)."""
    from runner.child.prewarm import _madvise, _private_ranges

    ranges, madvise = _private_ranges(), _madvise()
    if not ranges or madvise is None:
        return None
    done, huge = 0, 2 ** 21
    for lo, hi in ranges:
        lo, hi = -(-lo // huge) * huge, hi // huge * huge  # only whole huge pages
        if hi <= lo:
            continue
        madvise(lo, hi - lo, HUGEPAGE)
        if madvise(lo, hi - lo, COLLAPSE) == 0:
            done += hi - lo
    return done


def forked(argv: list[str], folder: Path, freeze: bool, own: bool = False, huge: bool = False,
           shared_cache: Path | None = None) -> dict:
    """The job forked from this process, its compile cache `folder`'s own (cold) or `shared_cache`'s."""
    out = folder / "out.json"
    folder.mkdir(parents=True, exist_ok=True)
    if freeze:
        gc.freeze()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.environ.update(caches(shared_cache or folder))
            if own:  # as the worker's zygote does in each child before its job
                from runner.child.prewarm import own_heap

                own_heap()
                if huge:  # what it collapsed shows in the job's own pages report (plain_job.huge_pages)
                    huge_heap()
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            from bench import plain_job

            sys.argv = ["plain_job", *argv]
            code = plain_job.main()
            sys.stdout.flush()
        finally:
            os._exit(code)
    if freeze:
        gc.unfreeze()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the forked job failed ({status})")
    return json.loads(out.read_text().strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--model", action="append", metavar="MODEL:BATCH[:MODE]")
    p.add_argument("--iters", type=int, default=3, help="rounds of the steady state (plain_job --iters)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("-o", "--output")
    args = p.parse_args()
    models = args.model or ["simplenet:32"]
    from runner.child.zygote import _preload

    _preload()  # as the worker's preloaded parent: torch, the compile line, the first call's modules; CUDA untouched
    got: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for m in models:
                name, _, rest = m.partition(":")
                batch, _, mode = rest.partition(":")
                argv = job_argv(name, int(batch or 32), args.device, mode or "default", args.iters)
                for w, way in enumerate(WAYS):
                    folder = Path(tmp) / f"{i}-{name}-{w}"
                    row = fresh(argv, folder) if way == "fresh" else \
                        forked(argv, folder, way.endswith("freeze"), "own" in way, way.endswith("huge"))
                    got.setdefault((m, way), []).append(row)
                    print(json.dumps({"model": m, "way": way, "repeat": i, **row}), file=sys.stderr, flush=True)
            print(f"repeat {i + 1} of {args.repeat} done", file=sys.stderr)
    lines = [f"fork_vs_fresh: {args.device}, {args.repeat} repeat(s), dynamic=false, cold cache",
             f"{'model':<28}{'way':<22}{'compiled first call: median [min, max] s':>42}   steady state, ms: eager / "
             f"compiled (each process)"]
    for m in models:
        for way in WAYS:
            rs = got[(m, way)]
            xs = [r["compiled_first_call_s"] for r in rs]
            steady = ", ".join(f"{r['eager_ms']:.3f} / {r['compiled_ms']:.3f}" for r in rs if "eager_ms" in r)
            lines.append(f"{m:<28}{way:<22}{median(xs):>20.3f} [{min(xs):.3f}, {max(xs):.3f}]   {steady}")
    lines += ["", "the collector's full collections in the compiled first call, s: median [min, max]"]
    for m in models:
        for way in WAYS:
            xs = [r["gc_pauses"]["full_seconds"] for r in got[(m, way)] if "full_seconds" in r.get("gc_pauses", {})]
            if xs:
                lines.append(f"  {m:<28}{way:<22}{median(xs):.3f} [{min(xs):.3f}, {max(xs):.3f}]")
    thp = {r.get("pages", {}).get("thp") for rs in got.values() for r in rs} - {None}
    lines += ["", f"anonymous memory after the first call, MB, and how much of it in huge pages (transparent huge pages: "
              f"{', '.join(sorted(thp)) or 'not read'}): median per way"]
    for m in models:
        for way in WAYS:
            rs = [r.get("pages", {}) for r in got[(m, way)]]
            if any("AnonHugePages" in r for r in rs):
                lines.append(f"  {m:<28}{way:<22}{median([r.get('Anonymous', 0) for r in rs]):.0f} MB, "
                             f"huge {median([r.get('AnonHugePages', 0) for r in rs]):.0f} MB")
    lines.append("")
    lines.append("parts, medians (s): " + " | ".join(WAYS))
    for m in models:
        lines.append(f"  {m}")
        parts = list(dict.fromkeys(k for way in WAYS for r in got[(m, way)] for k in r["compile_breakdown_s"]))
        for part in parts:
            vals = [median([r["compile_breakdown_s"].get(part, 0.0) for r in got[(m, way)]]) for way in WAYS]
            lines.append(f"    {part:<28}" + " | ".join(f"{v:8.3f}" for v in vals))
    emit("\n".join(lines), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
