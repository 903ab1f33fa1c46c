"""How far a cold first call moves between fresh processes, and whether the answer's cold interval (lab.first_call.bounds)
holds on real processes: the cold harness reference's fresh scripts (bench.honest_answers reference --cold, JSON lines
with each process's compiled_first_call_s), several leases of one GPU kind. Per configuration: how many processes and
leases, the spread between processes within a lease and over all of them, how wide one process's interval is once
all of them are history; then, lease by lease, each process as a sweep's one cold run with every other lease's
processes as its history (a new sweep on a new machine): does its interval hold the median of the other leases'
processes (the configuration's cold first call, as near as they tell it)?

  python -m bench.cold_spread bench/results/h200_harness_reference_cold_*.jsonl [-o FILE]
      [--lease STEM --worker "CONFIG=S1,S2" ...]

With --lease (a file's stem) and --worker (a worker's cold first calls of a configuration on that lease, seconds):
each worker figure bracketed by the other leases' processes as its history, against that lease's scripts' median.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

import numpy as np

from lab import first_call
from lab.interval import config_spreads


def read(paths: list[str]) -> dict[str, dict[str, list[float]]]:
    """Per configuration, per file (a lease), its processes' cold first calls in seconds."""
    out: dict[str, dict[str, list[float]]] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            r = json.loads(line)
            s = r.get("compiled_first_call_s")
            if r.get("cold", True) and isinstance(s, (int, float)) and s > 0 and not r.get("disturbed"):
                out.setdefault(r["config"], {}).setdefault(Path(path).stem, []).append(float(s))
    return out


def spread_of(seconds: list[float]):
    """Their Spread (log seconds), as the database's cold spreads are made (lab.interval.config_spreads)."""
    return config_spreads(np.zeros(len(seconds), dtype=np.intp), np.array(seconds))[0]


def table(data: dict[str, dict[str, list[float]]]) -> str:
    lines = [f"{'configuration':<34}{'procs':>6}{'leases':>7}{'range s':>16}{'sd within':>11}{'sd all':>8}"
             f"{'1-proc interval':>17}{'held':>8}"]
    held_all: list[bool] = []
    for config, leases in data.items():
        every = [s for v in leases.values() for s in v]
        if len(every) < 4:
            continue
        logs = {k: np.log(v) for k, v in leases.items()}
        within_ss = sum(float(np.sum((x - x.mean()) ** 2)) for x in logs.values())
        within_df = sum(len(x) - 1 for x in logs.values())
        sd_within = math.sqrt(within_ss / within_df) if within_df else float("nan")
        spread = spread_of(every)
        one = first_call.Calls(statistics.median(every), (0,), mean_log=float(np.mean(np.log(every))))
        lo, hi, _ = first_call.bounds(one, spread)
        held = []
        for lease, mine in leases.items():
            others = [s for k, v in leases.items() if k != lease for s in v]
            truth = statistics.median(others)
            for s in mine:
                got = first_call.bounds(first_call.Calls(s, (0,), mean_log=math.log(s)), spread_of(others + [s]))
                held.append(got is not None and got[0] <= truth <= got[1])
        held_all += held
        lines.append(f"{config:<34}{len(every):>6}{len(leases):>7}{min(every):>8.2f}-{max(every):<7.2f}"
                     f"{sd_within:>11.1%}{math.sqrt(spread.var):>8.1%}{hi / lo:>16.2f}x{sum(held):>4}/{len(held)}")
    lines += ["", f"held: each process as a sweep's one cold run, the other leases' processes its history, its interval "
                  f"holding their median: {sum(held_all)} of {len(held_all)} ({sum(held_all) / max(1, len(held_all)):.1%})",
              "1-proc interval: hi/lo of one process's interval with every process its history (width end to end)"]
    return "\n".join(lines)


def worker_lines(data: dict, lease: str, worker: list[str]) -> str:
    lines, held = ["", f"a worker's cold first calls on {lease}, the other leases' scripts their history:"], []
    for item in worker:
        config, _, figures = item.partition("=")
        truth = statistics.median(data[config][lease])
        others = [s for k, v in data[config].items() if k != lease for s in v]
        for w in (float(x) for x in figures.split(",")):
            lo, hi, k = first_call.bounds(first_call.Calls(w, (0,), mean_log=math.log(w)), spread_of(others + [w]))
            held.append(lo <= truth <= hi)
            lines.append(f"  {config:<34} worker {w:6.2f} s [{lo:.2f}, {hi:.2f}] from {k}, the lease's scripts' median "
                         f"{truth:.2f} s: {'holds' if held[-1] else 'misses'}")
    return "\n".join(lines + [f"  held {sum(held)} of {len(held)}"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+")
    p.add_argument("-o", "--out")
    p.add_argument("--lease", help="a file's stem: the lease the worker figures are of")
    p.add_argument("--worker", action="append", default=[], help="CONFIG=S1,S2: a worker's cold first calls, s")
    args = p.parse_args()
    data = read(args.files)
    text = table(data) + (worker_lines(data, args.lease, args.worker) if args.lease and args.worker else "")
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
