"""The version diff: the same configuration under two torch versions side by side, from the answer's rows
(lab.answer), with the change in latency speedup, compiled latency and the cold first call. A change past
THRESHOLD is called better or worse by the metric's direction, as PyTorch's HUD colours its benchmarks; within it,
neutral. No pandas, no torch, no streamlit: `python -m runner report --versions` prints the same rows."""
from __future__ import annotations

import re
from typing import Iterable

from lab import answer

THRESHOLD_PCT = 5.0
# answer column -> (name in the diff, True when bigger is better)
METRICS = {"speedup": ("speedup", True), "compiled_ms": ("compiled_ms", False),
           "first_call_cold_s": ("first_call_s", False)}
BETTER, WORSE, NEUTRAL = "better", "worse", f"within {THRESHOLD_PCT:g}%"
PREFIX = "torch "  # how the answer's label names a torch version (lab.labels.part)


def version_key(version: str) -> tuple:
    """2.9.1 before 2.13.0 before 2.14.1+cu128 (numbers compared as numbers; the local part last)."""
    public, _, local = version.partition("+")
    return tuple(int(n) for n in re.findall(r"\d+", public)), public, local


def _split(config: str) -> tuple[str, str | None]:
    """An answer row's configuration label -> (the label without its torch part, the torch version or None)."""
    parts = config.split(" · ")
    versions = [p[len(PREFIX):] for p in parts if p.startswith(PREFIX)]
    return " · ".join(p for p in parts if not p.startswith(PREFIX)), (versions[0] if versions else None)


def judge(change_pct: float | None, bigger_is_better: bool) -> str | None:
    if change_pct is None:
        return None
    if abs(change_pct) <= THRESHOLD_PCT:
        return NEUTRAL
    return BETTER if (change_pct > 0) == bigger_is_better else WORSE


def diff_rows(rows: Iterable[dict]) -> list[dict]:
    """From answer rows (where the torch version varies, their labels name it): one row per model, batch size,
    configuration and pair of consecutive versions that both ran it, older version as A. A side whose every run was
    disturbed still has its numbers in the answer (lab.noise); the row says noisy."""
    by_config: dict[tuple, dict[str, dict]] = {}
    for row in rows:
        base, version = _split(row["config"])
        if version is not None:
            by_config.setdefault((row["model"], row["batch_size"], base), {})[version] = row
    out = []
    for (model, bs, config), per in sorted(by_config.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        versions = sorted(per, key=version_key)
        for a, b in zip(versions, versions[1:]):
            ra, rb = per[a], per[b]
            row = {"model": model, "batch_size": bs, "config": config, "torch_a": a, "torch_b": b}
            for column, (name, bigger) in METRICS.items():
                va, vb = ra[column], rb[column]
                change = (vb - va) / va * 100 if va not in (None, 0) and vb is not None else None
                row |= {f"{name}_a": va, f"{name}_b": vb, f"{name}_change_pct": change,
                        f"{name}_verdict": judge(change, bigger)}
            row["noisy"] = bool(ra["noisy"] or rb["noisy"])
            row["job_ids"] = f"{ra['job_ids']} | {rb['job_ids']}"
            out.append(row)
    return out


COLUMNS = ("model", "batch_size", "config", "torch_a", "torch_b",
           *(f"{name}_{part}" for name, _ in METRICS.values() for part in ("a", "b", "change_pct", "verdict")),
           "noisy", "job_ids")


def rows_markdown(rows: list[dict]) -> str:
    """A Markdown table: per configuration, A → B and the change of each metric with its verdict."""
    def value(v) -> str:
        return "–" if v is None else f"{v:.4g}"

    head = ["model", "bs", "configuration", "torch A → B", *(f"{name} A → B (Δ)" for name, _ in METRICS.values())]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["model"], str(r["batch_size"]), r["config"].replace("|", "\\|") + (" ⚠ noisy" if r["noisy"] else ""),
                 f"{r['torch_a']} → {r['torch_b']}"]
        for name, _ in METRICS.values():
            change = r[f"{name}_change_pct"]
            cells.append(f"{value(r[f'{name}_a'])} → {value(r[f'{name}_b'])}"
                         + ("" if change is None else f" ({change:+.1f}%, {r[f'{name}_verdict']})"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def rows_csv(rows: list[dict]) -> str:
    return answer.rows_csv(rows, COLUMNS)
