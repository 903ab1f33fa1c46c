"""Process-to-process variation, and what the automatic process repeats make of it, through the real worker.

Host-bound configurations (simplenet, mlp at small batch: the GPU idles a quarter of the call or more) are
host-sensitive: their latency moves with the host's speed, which differs between fresh processes. Each
configuration is submitted once with the defaults (`--reruns 2 --process-repeats 3`): a host-sensitive result
queues repeats in separate processes, a noisy one re-runs. The table shows every run (which process, its
latency, the GPU's idle share, its kind), then per configuration the answer's interval over all its processes
beside the interval the first process alone would have claimed: how much one tight process hides.

    python -m bench.noise_processes [--out DIR] [--device cpu --small]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from sqlalchemy import select

from bench.drive import drain, submit_all
from db.database import get_engine
from db.engine import reading
from db.models import Job
from db.reports import report
from db.results import export_records
from lab import noise

CONFIGS = {  # name: submit flags
    "simplenet-bs8": ["--model", "simplenet", "--batch", "8"],
    "simplenet-bs8-reduce-overhead": ["--model", "simplenet", "--batch", "8", "--mode", "reduce-overhead"],
    "mlp-bs8": ["--model", "mlp", "--batch", "8"],
    "mlp-bs64": ["--model", "mlp", "--batch", "64"],
    "complexnet-bs8": ["--model", "complexnet", "--batch", "8"],
}
SMALL = {"complexnet-bs8": ["--arg", "image_size=32"]}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp())
    p.add_argument("--device", default="cuda")
    p.add_argument("--small", action="store_true", help="smaller sizes (a CPU smoke run of this script)")
    p.add_argument("--only", action="append")
    p.add_argument("--iters", default="30")
    p.add_argument("--process-repeats", default="3")
    p.add_argument("--reruns", default="2")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{out / 'bench.db'}"
    chosen = {name: CONFIGS[name] + (SMALL.get(name, []) if args.small else []) for name in args.only or CONFIGS}
    if args.device == "cpu":  # reduce-overhead is default on the CPU
        chosen = {k: v for k, v in chosen.items() if "reduce-overhead" not in k}
    ids = submit_all(db, chosen, "--device", args.device, "--iters", args.iters, "--timeout", "900",
                     "--reruns", args.reruns, "--process-repeats", args.process_repeats)
    wall = drain(db, out, args.device)
    engine = get_engine(db)
    recs = {r["job_id"]: r for r in export_records(engine)}
    with reading(engine) as s:
        links = {j.id: (j.sweep_id, noise.short(j.follow_up, j.follow_up_of)) for j in s.scalars(select(Job)).all()}
    lines = [f"{'config':<30} {'job':>4} {'follow-up':<18} {'eager ms':>9} {'comp ms':>9} {'speedup':>7} "
             f"{'idle e/c':>9} {'spread e/c':>11} {'kind':<6}"]
    sweep_of = {}
    for name, first_ids in ids.items():
        sweep = links[first_ids[0]][0]
        sweep_of[sweep] = name
        for job_id in sorted(j for j, (sw, _) in links.items() if sw == sweep):
            r = recs[job_id]
            if r["status"] != "succeeded":
                lines.append(f"{name:<30} {job_id:>4} {r['status']}: {(r['error'] or '')[:120]}")
                continue
            lines.append(f"{name:<30} {job_id:>4} {links[job_id][1]:<18} {r['eager_ms']:>9.4f} {r['compiled_ms']:>9.4f} "
                         f"{r['speedup']:>7.3f} {_pair(r, 'host_overhead', '{:.0%}'):>9} "
                         f"{_pair(r, 'spread', '{:.1%}'):>11} {noise.record_kind(r):<6}")
    lines += ["", f"{'config':<30} {'runs':>4} {'answer: speedup [95%]':<24} {'first process alone':<24} verdict"]
    for sweep, name in sweep_of.items():
        for row in report(engine, sweep_ids=[sweep]):
            first = min(int(j) for j in row["job_ids"].split())
            alone = next(((a["speedup"], a["speedup_ci_low"], a["speedup_ci_high"])
                          for a in report(engine, job_ids=[first]) if a["speedup"] is not None), None)
            answer = _interval(row["speedup"], row["speedup_ci_low"], row["speedup_ci_high"])
            lines.append(f"{name:<30} {row['runs']:>4} {answer:<24} {_interval(*alone) if alone else '-':<24} "
                         f"{row['verdict'][:110]}")
    first = next(iter(recs.values()), {})
    lines.append(f"\nworker wall time {wall:.0f} s; {len(recs)} jobs for {len(ids)} configurations; device: "
                 f"{first.get('device_name')}, torch {first.get('torch_version')}")
    text = "\n".join(lines)
    print(text)
    (out / "noise_processes.txt").write_text(text + "\n")
    return 0


def _pair(r: dict, what: str, fmt: str) -> str:
    e, c = r.get(f"eager_{what}"), r.get(f"compiled_{what}")
    return "-" if e is None and c is None else "/".join("-" if v is None else fmt.format(v) for v in (e, c))


def _interval(point, low, high) -> str:
    if point is None:
        return "-"
    return f"{point:.3f}x" + (f" [{low:.3f}, {high:.3f}]" if low is not None else "")


if __name__ == "__main__":
    sys.exit(main())
