"""Did inductor's compile-worker pool, still starting while a job's rounds ran, slow the rounds? Per arm (a folder
of bench.honest_answers sweep databases: before runner/child/compile_workers.py and after it), each process's eager
latency, paired speedup, and what its own helper processes burned during its rounds (runner.child.disturbance's
own_helpers), per configuration and overall; beside them, the harness reference's processes in the same folders.

    python -m bench.compile_pool NAME=DIR [NAME=DIR ...]
"""
from __future__ import annotations

import json
import sqlite3
import statistics
import sys
from pathlib import Path


def processes(db: Path, arm: str) -> list[dict]:
    out = []
    with sqlite3.connect(db) as con:
        for spec, eager_ms, center, detail, follow_up in con.execute(
                "SELECT j.spec, r.eager_ms, r.round_speedup, r.detail, j.follow_up_of FROM jobs j "
                "JOIN results r ON r.job_id = j.id WHERE j.status = 'succeeded'"):
            s, d = json.loads(spec), json.loads(detail or "{}")
            dist = d.get("disturbance") or {}
            rounds = dist.get("rounds_s") or 0
            helpers = sum(h.get("cpu_s", 0) for h in dist.get("own_helpers") or [])
            out.append({"arm": arm, "config": f"{s['model']} bs{s['batch_size']} {s.get('mode')} dyn={s.get('dynamic')}",
                        "eager_ms": eager_ms, "center": center, "repeat": follow_up is not None,
                        "helpers": helpers / rounds if rounds else None, "disturbed": dist.get("causes")})
    return out


def main(argv: list[str]) -> int:
    folders = dict(a.split("=", 1) for a in argv)
    rows = [p for arm, d in folders.items() for db in sorted(Path(d).glob("sweep-*.db")) for p in processes(db, arm)]
    arms = list(folders)
    configs = sorted({r["config"] for r in rows})
    print(f"{'configuration':40s} " + " ".join(f"{a + ': speedup (eager ms) median, n':>36s}" for a in arms))
    for c in configs:
        cells = []
        for a in arms:
            mine = [r for r in rows if r["arm"] == a and r["config"] == c and r["center"]]
            cells.append(f"{statistics.median(r['center'] for r in mine):.3f}x "
                         f"({statistics.median(r['eager_ms'] for r in mine):.3f} ms) n={len(mine)}" if mine else "-")
        print(f"{c:40s} " + " ".join(f"{x:>36s}" for x in cells))
    print()
    slow = 0.12  # ms: simplenet bs 32's eager call on a slow-host process (0.13-0.20 ms against 0.08-0.10)
    for a, d in folders.items():
        ref = [json.loads(x) for x in (Path(d) / "reference.jsonl").read_text().splitlines()] \
            if (Path(d) / "reference.jsonl").exists() else []
        worker = [r["eager_ms"] for r in rows if r["arm"] == a and r["config"].startswith("simplenet")]
        harness = [r["eager_ms"] for r in ref if r.get("config", "").startswith("simplenet") and "eager_ms" in r]
        print(f"{a}: simplenet processes whose eager call took > {slow} ms: worker {sum(x > slow for x in worker)}"
              f"/{len(worker)}, harness {sum(x > slow for x in harness)}/{len(harness)}")
    print()
    for a in arms:
        mine = [r for r in rows if r["arm"] == a]
        busy = [r["helpers"] for r in mine if r["helpers"] is not None]
        if not busy:
            print(f"{a}: {len(mine)} processes; none recorded its own helpers during the rounds")
            continue
        print(f"{a}: {len(mine)} processes; own helpers' CPU during the rounds, median {statistics.median(busy):.2f} "
              f"of a core (max {max(busy):.2f}); processes with a helper busy > 0.5 core: "
              f"{sum(b > 0.5 for b in busy)}/{len(busy)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
