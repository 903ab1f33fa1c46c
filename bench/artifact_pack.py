"""What packing a job's artifacts costs the child (lab.artifact_files: gzip of the output code, the FX graphs and the
compile trace), by compression level, on the texts real jobs kept: the artifacts of the first runs in a sweep's
database (e.g. one a GPU sweep of bench.honest_answers left). Prints, per job and level, the seconds to pack and the
bytes kept; the child pays the packing between its last timed step and its exit, so the next job waits for it.

    python -m bench.artifact_pack DB [--level 1 --level 6] [--repeat 5]
"""
from __future__ import annotations

import argparse
import gzip
import time

from sqlalchemy import select

from db.database import get_engine
from db.engine import reading
from db.models import Artifact

TEXTS = ("output_code", "fx_graphs", "trace")  # what the child packs as text (tlparse's report is the worker's)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("db", help="a sweep's SQLite file")
    p.add_argument("--level", type=int, action="append", help="gzip levels to compare (default 1 and 6)")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    levels = args.level or [1, 6]
    with reading(get_engine(f"sqlite:///{args.db}")) as s:
        rows = s.execute(select(Artifact.job_id, Artifact.name, Artifact.data)
                         .where(Artifact.name.in_(TEXTS)).order_by(Artifact.job_id)).all()
    jobs: dict[int, list[bytes]] = {}
    for job_id, _name, data in rows:
        jobs.setdefault(job_id, []).append(gzip.decompress(data))
    print(f"artifact_pack: {args.db}, {len(jobs)} jobs with texts, best of {args.repeat} per level")
    print(f"{'job':>5} {'text MB':>8} " + " ".join(f"{'level ' + str(lv) + ' ms':>12} {'kept KB':>8}" for lv in levels))
    totals = {lv: [0.0, 0] for lv in levels}
    for job_id, texts in jobs.items():
        cells = []
        for lv in levels:
            best = min(_timed(texts, lv) for _ in range(args.repeat))
            kept = sum(len(gzip.compress(t, compresslevel=lv)) for t in texts)
            totals[lv][0] += best
            totals[lv][1] += kept
            cells.append(f"{best * 1e3:12.1f} {kept / 1024:8.0f}")
        print(f"{job_id:>5} {sum(map(len, texts)) / 2**20:8.2f} " + " ".join(cells))
    print("total       " + " ".join(f"{t * 1e3:12.1f} {k / 1024:8.0f}" for t, k in totals.values()))


def _timed(texts: list[bytes], level: int) -> float:
    began = time.perf_counter()
    for t in texts:
        gzip.compress(t, compresslevel=level)
    return time.perf_counter() - began


if __name__ == "__main__":
    main()
