"""What to use for N calls: the total time of N calls (first call + N x latency) of eager and of every configuration in
the answer table, the lowest line at each N and where it changes hands. A configuration whose every run was
disturbed is drawn dotted grey, never the lowest line."""
from __future__ import annotations

import math

import plotly.graph_objects as go

from dashboard.data.plot_data import NOISY
from dashboard.markup import md, plot
from lab import noise
from lab.wording import count

EAGER = "eager"
LOWEST_COLOR, OTHER_COLOR, EAGER_COLOR, NOISY_COLOR = "#0b6e4f", "#8aa1b1", "#222222", "#b0b0b0"


def lines(rows: list[dict]) -> list[dict]:
    """One line per configuration with a latency and a first call (`first_s` + `ms` per call), and eager's (its
    first call and the median latency of the jobs' own eager rounds). A row whose every run was disturbed is a line
    marked `noisy`, which `answering` leaves out of the lowest line, the crossovers and the recommendation while a
    configuration not disturbed in every run is there."""
    out, drawn = [], []
    for r in rows:
        first = r["first_call_cold_s"] if r["first_call_cold_s"] is not None else r["first_call_warm_s"]
        if r["speedup"] is None or r["compiled_ms"] is None or first is None:
            continue
        drawn.append(r)
        if r.get("noisy"):
            out.append({"name": r["config"], "first_s": first, "ms": r["compiled_ms"], "noisy": True,
                        "why": r["noise_note"] or "disturbed", "runs": r["runs"]})
            continue
        out.append({"name": r["config"], "first_s": first, "ms": r["compiled_ms"]})
    if not out:
        return []
    # eager as the rows that count have it (lab.noise.answering: the undisturbed ones, or all where none is)
    counted = [r for r, c in zip(drawn, noise.answering(bool(r.get("noisy")) for r in drawn)) if c]
    eager_ms = [r["eager_ms"] for r in counted if r["eager_ms"] is not None]
    eager_first = next((r["eager_first_call_s"] for r in counted if r["eager_first_call_s"] is not None), None)
    if eager_first is not None and eager_ms:
        eager_ms.sort()
        out.insert(0, {"name": EAGER, "first_s": eager_first, "ms": eager_ms[len(eager_ms) // 2]})
    return out


def answering(ls: list[dict]) -> list[dict]:
    """The lines that may be the lowest or the recommendation, as lab.noise.answering counts runs: eager and every
    configuration not disturbed in every run; where every configuration was, all of them (the answer speaks)."""
    compiled = [ln for ln in ls if ln["name"] != EAGER]
    counts = dict(zip(map(id, compiled), noise.answering(bool(ln.get("noisy")) for ln in compiled)))
    return [ln for ln in ls if ln["name"] == EAGER or counts[id(ln)]]


def noisy_note(ls: list[dict]) -> str:
    """One line naming the configurations drawn dotted grey (noisy runs only), and why; "" when none is."""
    noisy = [ln for ln in ls if ln.get("noisy")]
    if not noisy:
        return ""
    if all(ln in answering(ls) for ln in noisy):  # every configuration was disturbed: they answer, marked
        return (f"{NOISY}, dotted grey: every run of every configuration here was disturbed, so the lowest line and "
                "the recommendation are their numbers: "
                + "; ".join(f"{ln['name']} ({ln['why']})" for ln in noisy)
                + ". Re-run them when nothing else runs on the machine.")
    return (f"{NOISY}, dotted grey and never recommended (every run was disturbed): "
            + "; ".join(f"{ln['name']} (all {ln['runs']} run{'s' * (ln['runs'] != 1)}: {ln['why']})" for ln in noisy)
            + ". Re-run it when nothing else runs on the machine.")


def total_s(line: dict, n: float) -> float:
    return line["first_s"] + n * line["ms"] / 1e3


def best(ls: list[dict], n: float) -> dict:
    return min(ls, key=lambda ln: (total_s(ln, n), ln["ms"]))


def lowest(ls: list[dict], n_max: float) -> list[tuple[dict, float, float]]:
    """The lowest line from 1 call to n_max, as (line, from N, to N) segments: where one hands over to another
    is a crossover (exact: two straight lines cross once)."""
    segments, n, cur = [], 1.0, best(ls, 1.0)
    while True:
        ahead = [((ln["first_s"] - cur["first_s"]) / ((cur["ms"] - ln["ms"]) / 1e3), ln["ms"], i)
                 for i, ln in enumerate(ls) if ln["ms"] < cur["ms"]]
        ahead = [a for a in ahead if a[0] > n]
        if not ahead or min(ahead)[0] >= n_max:
            return segments + [(cur, n, n_max)]
        cross, _, i = min(ahead)
        segments.append((cur, n, cross))
        n, cur = cross, ls[i]


def span(ls: list[dict]) -> float:
    """The N axis runs to 10x past the last crossover (at least 10^4 calls)."""
    last = max((b for _, _, b in lowest(answering(ls), 1e12)[:-1]), default=1.0)
    return 10 ** max(4, math.ceil(math.log10(last * 10)))


def recommend(ls: list[dict], n: int, batch_size) -> str:
    """One line: what to use for `n` calls at this batch size, and what it saves against eager."""
    ls = answering(ls)
    if not ls:
        return "No configuration at this batch size has both a latency and a first call (noisy or failed runs only)."
    pick, eager = best(ls, n), next(ln for ln in ls if ln["name"] == EAGER)
    calls = f"For {n:,} call{'s' * (n != 1)} at bs {batch_size}"
    if pick is eager:
        compiled = [ln for ln in ls if ln is not eager]
        faster = [ln for ln in compiled if ln["ms"] < eager["ms"]]
        if not faster:  # slower (or no faster) per call: no N repays a compile
            runner_up = min(compiled, key=lambda ln: ln["ms"])
            return (f"{calls}, stay eager: {_s(total_s(eager, n))} in all. No compiled configuration is faster per "
                    f"call here (the fastest, {md(runner_up['name'])}, takes {runner_up['ms']:.3g} ms against eager's "
                    f"{eager['ms']:.3g} ms), so no number of calls repays its first call.")
        runner_up = best(faster, n)
        repaid = (runner_up["first_s"] - eager["first_s"]) / ((eager["ms"] - runner_up["ms"]) / 1e3)
        return (f"{calls}, stay eager: {_s(total_s(eager, n))} in all; the best compiled configuration, "
                f"{md(runner_up['name'])}, takes {_s(total_s(runner_up, n))}: its first call is repaid only from "
                f"{math.ceil(repaid):,} calls on.")
    return (f"{calls}, use **{md(pick['name'])}**: {_s(total_s(pick, n))} in all, against {_s(total_s(eager, n))} "
            f"eager ({total_s(eager, n) / total_s(pick, n):.2f}× less time).")


def figure(ls: list[dict], batch_size, n_mark: int | None = None) -> go.Figure:
    """Total time over N (both axes log): every configuration thin, eager dashed, the lowest line drawn over
    them thick, each crossover marked and labelled with the N and the configuration that takes over. A line with
    noisy runs only is dotted grey and marked, and never taken for the lowest."""
    n_max = span(ls)
    if n_mark:  # the N typed is on the chart, with a decade beyond it
        n_max = max(n_max, 10 ** (math.floor(math.log10(n_mark)) + 1))
    xs = _short([10 ** (k / 20) for k in range(0, int(math.log10(n_max) * 20) + 1)], 3)
    fig = go.Figure()
    for ln in ls:
        eager, noisy = ln["name"] == EAGER, bool(ln.get("noisy"))
        name = f"{NOISY} · {plot(ln['name'])}" if noisy else plot(ln["name"])
        why = f"<br>all {count(int(ln['runs']), 'run')} disturbed ({plot(ln['why'])})" if noisy else ""
        fig.add_scatter(x=xs, y=_short(total_s(ln, n) for n in xs), mode="lines", name=name,
                        showlegend=eager, legendgroup=None if eager else "noisy" if noisy else "others",
                        line=dict(color=EAGER_COLOR if eager else NOISY_COLOR if noisy else OTHER_COLOR, width=1.5,
                                  dash="dash" if eager else "dot" if noisy else None),
                        hovertemplate=f"<b>{name}</b><br>%{{x:,.0f}} calls: %{{y:.3g}} s{why}<extra></extra>")
    segments = lowest(answering(ls), n_max)
    for ln, a, b in segments:
        seg_x = _short([a] + [x for x in xs if a < x < b] + [b])
        fig.add_scatter(x=seg_x, y=_short(total_s(ln, n) for n in seg_x), mode="lines", name="lowest: " + plot(ln["name"]),
                        legendgroup="lowest", showlegend=False, line=dict(color=LOWEST_COLOR, width=5),
                        hovertemplate=f"<b>lowest: {plot(ln['name'])}</b><br>%{{x:,.0f}} calls: %{{y:.3g}} s"
                                      "<extra></extra>")
    for k, (ln, a, _) in enumerate(segments[1:]):
        fig.add_scatter(x=[a], y=[total_s(ln, a)], mode="markers", showlegend=False, hoverinfo="skip",
                        marker=dict(size=10, color=LOWEST_COLOR, line=dict(color="white", width=1.5)))
        fig.add_annotation(x=math.log10(a), y=math.log10(total_s(ln, a)), text=f"from {a:,.0f} calls:<br>{plot(ln['name'])}",
                           # every other label below and right of its crossover, where no line runs (the lowest
                           # line is the bottom one): two crossovers close together keep their labels apart
                           showarrow=True, arrowhead=2, ax=-60 if k % 2 == 0 else 70, ay=-45 if k % 2 == 0 else 50,
                           font=dict(size=11),
                           bgcolor="rgba(255,255,255,0.85)")
    # the configurations' lines share one grey: one legend entry says what they are (their names: hover, crossovers)
    fig.add_scatter(x=[None], y=[None], mode="lines", name="each configuration (hover for its name)", legendgroup="others",
                    line=dict(color=OTHER_COLOR, width=1.5))
    fig.add_scatter(x=[None], y=[None], mode="lines", name="lowest total at each N (labels: where it changes hands)",
                    legendgroup="lowest", line=dict(color=LOWEST_COLOR, width=5))
    if any(ln.get("noisy") for ln in ls):
        every = all(ln.get("noisy") for ln in ls if ln["name"] != EAGER)  # then they answer (answering)
        fig.add_scatter(x=[None], y=[None], mode="lines", name=f"{NOISY}: every run disturbed" + (
                            " (every configuration here: the answer is theirs)" if every else
                            " (no answer, never the lowest)"),
                        legendgroup="noisy", line=dict(color=NOISY_COLOR, width=1.5, dash="dot"))
    if n_mark:
        fig.add_vline(x=n_mark, line=dict(color="#c44", dash="dot", width=1))
    fig.update_xaxes(type="log", dtick=1, title="calls (N)")
    fig.update_yaxes(type="log", dtick=1, title="total time of N calls, s (first call + N × latency)")
    fig.update_layout(title=f"What to use for N calls · bs {batch_size}", height=460, margin=dict(t=50, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.18, xanchor="left", x=0))
    return fig


def _short(values, digits: int = 4) -> list[float]:
    """Plotted numbers to a few significant digits: the chart's JSON is sent before it is drawn, and 17-digit floats
    made it twice the size (the hover reads 3 digits; a log axis shows fewer)."""
    return [float(f"{v:.{digits}g}") for v in values]


def _s(seconds: float) -> str:
    return f"{seconds:.3g} s" if seconds < 600 else f"{seconds / 60:.3g} min" if seconds < 7200 else f"{seconds / 3600:.3g} h"
