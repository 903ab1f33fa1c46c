"""Which candidates a search (lab.advise) runs, in what order, and when a race between candidates stops paying.

Order. Candidates are screened in stages, cheap and likely-good first:
  - a setting's *base* is the one of its backend and mode with the simplest shapes and scope (dynamic False before
    None before True, scope model before blocks); the others of that backend and mode are its *variants*;
  - at steady state the bases of mode default and reduce-overhead run in the first round, then max-autotune, then
    max-autotune-no-cudagraphs while it could still win (the four modes are autotuning x CUDA graphs: the fourth's
    number is predicted from the other three, autotuning taken to gain the same with CUDA graphs as without); the
    variants are not run: at one batch size, marking shapes dynamic or compiling block by block changes how much is
    compiled, not how fast a setting's kernels run, so no variant can beat its base at steady state (one whose base
    failed, or recompiled in its rounds, runs; with a traffic stream, whose sizes vary, or calls that weigh the
    compile, variants run);
  - where the caller's calls count (--calls, a traffic stream), the first round is one setting, the lightest to
    compile (the scout), so that "don't compile" can be answered after one process; then the other bases that do
    not autotune, then the autotuning ones (only while they could still win), then the variants (only while their
    base is in contention).

Indifference zone. Candidates whose numbers for the caller lie within ZONE of the leader's and inside each other's
intervals are equal within the measurement: the race between them stops, and the one cheapest to compile (measured
cold first call; on a tie the simpler setting) is recommended. A race that could not separate two candidates even at
the process limit (their difference smaller than their intervals would be by then) stops too.
"""
from __future__ import annotations

import math
from typing import Mapping

ZONE = 0.03  # differences smaller than this, for the caller, are not worth a process to tell apart
COMPILE_FLOOR = 0.1  # a setting not yet run is taken to compile in at least this share of the lightest measured
MODE_RANK = {"default": 0, "reduce-overhead": 1, "max-autotune-no-cudagraphs": 2, "max-autotune": 3}
AUTOTUNES = {"max-autotune-no-cudagraphs", "max-autotune"}
# an autotuning mode compiles what its sibling compiles, then tunes: the sibling's cold first call bounds it below
SIBLINGS = {"max-autotune-no-cudagraphs": ("default",), "max-autotune": ("reduce-overhead", "default")}
# at steady state, max-autotune runs after default and reduce-overhead, and max-autotune-no-cudagraphs after it: the
# four modes are autotuning (no/yes) x CUDA graphs (no/yes), so the fourth is predicted from the other three
# (SQUARE: the gain of autotuning taken to be the same with and without CUDA graphs) and run only while that
# prediction could still win
AUTOTUNE_STAGE = {"max-autotune": 1, "max-autotune-no-cudagraphs": 2}
SQUARE = {"max-autotune-no-cudagraphs": ("default", "max-autotune", "reduce-overhead"),
          "max-autotune": ("reduce-overhead", "max-autotune-no-cudagraphs", "default")}
DYNAMIC_RANK = {False: 0, None: 1, True: 2}
SCOPE_RANK = {"model": 0, "blocks": 1}


def _shape_rank(settings: Mapping) -> tuple[int, int]:
    return DYNAMIC_RANK.get(settings.get("dynamic"), 3), SCOPE_RANK.get(settings.get("scope"), 2)


def rank(settings: Mapping) -> tuple:
    """Simpler (and cheaper to compile) first: shapes and scope, then the mode, then the backend's name."""
    return (*_shape_rank(settings), MODE_RANK.get(settings.get("mode"), 9), str(settings.get("backend")))


def group(settings: Mapping) -> tuple[str, str]:
    return str(settings.get("backend")), str(settings.get("mode"))


def bases(all_settings: Mapping[str, Mapping]) -> dict[str, str]:
    """Each candidate's base: the key of the simplest candidate of its backend and mode (itself, for a base)."""
    best: dict[tuple, str] = {}
    for key, s in sorted(all_settings.items(), key=lambda kv: (_shape_rank(kv[1]), kv[0])):
        best.setdefault(group(s), key)
    return {key: best[group(s)] for key, s in all_settings.items()}


def stages(all_settings: Mapping[str, Mapping], calls_count: bool) -> dict[str, int]:
    """Each candidate's stage (0 runs in the first round); calls_count: the caller's calls decide (the scout)."""
    base_of = bases(all_settings)
    out = {}
    for key, s in all_settings.items():
        variant = base_of[key] != key
        late = AUTOTUNE_STAGE.get(s.get("mode"), 0)
        out[key] = (4 if variant else 1 + late) if calls_count else (3 if variant else late)
    if calls_count and all_settings:
        scout = min(all_settings, key=lambda k: (out[k], rank(all_settings[k]), k))
        out[scout] = 0
    return out


def ordered(specs: list[dict]) -> list[dict]:
    """Candidate specs in the order they are screened (and shown)."""
    return sorted(specs, key=lambda s: rank(s))


def log_half(p: tuple[float, float, float]) -> float:
    return (math.log(p[2]) - math.log(p[1])) / 2 if p[1] > 0 and p[2] > 0 else math.inf


def equal(p: tuple[float, float, float], lead: tuple[float, float, float]) -> bool:
    """Within ZONE of the leader for the caller, each one's number inside the other's interval."""
    return (p[0] >= lead[0] / (1 + ZONE) and p[2] >= lead[0] and lead[1] <= p[0])


def futile(p: tuple[float, float, float], n: int, lead: tuple[float, float, float], n_lead: int,
           limit: int) -> tuple[float, float] | None:
    """(their difference, the half-width their ratio would have at the limit) when processes up to the limit would
    most likely still not separate them (intervals narrowing as one over the root of the processes); else None."""
    if p[0] <= 0 or lead[0] <= 0:
        return None
    d = abs(math.log(lead[0] / p[0]))
    h = math.sqrt(log_half(p) ** 2 * max(n, 1) / limit + log_half(lead) ** 2 * max(n_lead, 1) / limit)
    return (math.exp(d) - 1, math.exp(h) - 1) if d < h else None
