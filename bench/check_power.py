"""How often would a perfect instrument pass issue 41's checks against a 3-process reference?

bench.honest_answers checks each answer against the median of 3 fresh harness processes of the same configuration
("within 10%", "within 5%") and each sweep's cold first call against those processes' ("within 10%"). Both sides
are draws from the spread between processes, which on an H200 is wide for the launch-bound configurations
(bench/results/h200_loop_vs_process_2026-11-30.txt: the process, not the loop). This reads the H200 cold references
kept under bench/results (one lease per file, 3-6 fresh processes per configuration), takes each configuration's
spread within a lease (each process's log less its lease's mean, pooled over leases: its shape kept, two modes
included), and draws: a reference = the median of 3 processes, an answer = the mean log of n processes (what a
perfect instrument reads from n processes: no error of its own) and a cold first call = one process. Printed per
configuration: the chance each check passes, then the chance all of a 20-answer table passes.

    python -m bench.check_power [--draws 20000] [--processes 2 --processes 6]
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import random
import statistics
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
PATTERN = "h200_harness_reference_cold_*.jsonl"


def residuals(files: list[Path], key: str) -> dict[str, list[float]]:
    """Per configuration, each process's log(key) less the mean of its lease's processes (leases with 2+), scaled to
    the spread's own width; disturbed processes left out."""
    out: dict[str, list[float]] = {}
    for f in files:
        lease: dict[str, list[float]] = {}
        for line in f.read_text().splitlines():
            r = json.loads(line)
            if r.get(key) and r[key] > 0 and not r.get("disturbed"):
                lease.setdefault(r["config"], []).append(math.log(r[key]))
        for config, logs in lease.items():
            if len(logs) >= 2:  # scaled by sqrt(k / (k - 1)): a residual about its own group's mean is narrower
                mean, scale = statistics.fmean(logs), math.sqrt(len(logs) / (len(logs) - 1))  # than the spread
                out.setdefault(config, []).extend((x - mean) * scale for x in logs)
    return out


def chances(res: list[float], n: int, draws: int, rng: random.Random) -> dict[str, float]:
    within10 = within5 = cold10 = 0
    for _ in range(draws):
        ref = statistics.median(rng.choice(res) for _ in range(3))
        answer = statistics.fmean(rng.choice(res) for _ in range(n))
        d = abs(math.exp(answer - ref) - 1)
        within10 += d <= 0.10
        within5 += d <= 0.05
    for _ in range(draws):
        ref = statistics.median(rng.choice(res) for _ in range(3))
        cold10 += abs(math.exp(rng.choice(res) - ref) - 1) <= 0.10
    return {"within10": within10 / draws, "within5": within5 / draws, "cold10": cold10 / draws}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--draws", type=int, default=20000)
    p.add_argument("--processes", type=int, action="append", help="processes behind an answer (default 2 and 6)")
    args = p.parse_args()
    ns = args.processes or [2, 6]
    files = sorted(Path(f) for f in glob.glob(str(RESULTS / PATTERN)))
    speed, cold = residuals(files, "speedup"), residuals(files, "compiled_first_call_s")
    rng = random.Random(0)
    print(f"{len(files)} H200 leases ({', '.join(f.name for f in files)}); a perfect instrument against the median of 3 "
          f"fresh processes, {args.draws} draws")
    head = f"{'configuration':<33} {'procs':>5} {'sd':>5} " + " ".join(
        f"{'n=' + str(n) + ' <10%':>10} {'<5%':>6}" for n in ns) + f" {'cold sd':>7} {'cold <10%':>9}"
    print(head)
    print("-" * len(head))
    table = {n: {"within10": [], "within5": []} for n in ns}
    colds = []
    for config in sorted(speed):
        res = speed[config]
        row = f"{config:<33} {len(res):>5} {statistics.pstdev(res):>5.1%} "
        for n in ns:
            c = chances(res, n, args.draws, rng)
            table[n]["within10"].append(c["within10"])
            table[n]["within5"].append(c["within5"])
            row += f"{c['within10']:>10.0%} {c['within5']:>6.0%} "
        cres = cold.get(config) or []
        if len(cres) >= 3:
            cc = chances(cres, 1, args.draws, rng)["cold10"]
            colds.append(cc)
            row += f"{statistics.pstdev(cres):>7.1%} {cc:>9.0%}"
        print(row)
    print()
    for n in ns:  # two sweeps of every configuration: 20 answers
        p10 = math.prod(x * x for x in table[n]["within10"])
        mean5 = 2 * sum(table[n]["within5"])
        print(f"n={n}: chance all 20 answers land within 10%: {p10:.1%}; expected within 5%: {mean5:.1f} of 20 "
              f"(the target: 18)")
    if colds:
        print(f"cold first call: chance every configuration's lands within 10%: {math.prod(colds):.2%} "
              f"({len(colds)} configurations, one sweep); expected {sum(colds):.1f} of {len(colds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
