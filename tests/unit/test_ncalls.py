"""What to use for N calls (dashboard.charts.ncalls): exact crossovers, the lowest line, the recommendation."""
from dashboard.charts import ncalls


def row(config, first, ms, eager_ms=1.0, speedup=1.5):
    return {"config": config, "first_call_cold_s": first, "first_call_warm_s": None, "compiled_ms": ms,
            "eager_ms": eager_ms, "eager_first_call_s": 0.0, "speedup": speedup}


ROWS = [row("A", 2.0, 0.5), row("B", 10.0, 0.1), row("C", 30.0, 0.2), row("noisy", 1.0, 0.01, speedup=None)]


def test_the_lowest_line_changes_hands_at_the_exact_crossovers():
    ls = ncalls.lines(ROWS)
    assert [ln["name"] for ln in ls] == ["eager", "A", "B", "C"]  # a noisy configuration (no speedup) is no line
    segments = ncalls.lowest(ls, 1e6)
    assert [(ln["name"], round(a), round(b)) for ln, a, b in segments] == [
        ("eager", 1, 4000), ("A", 4000, 20000), ("B", 20000, 1000000)]  # 2 s / 0.5 ms; 8 s / 0.4 ms
    assert ncalls.span(ls) == 1e6  # 10x past the last crossover


def test_recommendation_for_the_n_typed():
    ls = ncalls.lines(ROWS)
    assert "stay eager" in ncalls.recommend(ls, 100, 8) and "A, takes 2.05 s" in ncalls.recommend(ls, 100, 8)
    assert "its first call is repaid only from 4,000 calls on" in ncalls.recommend(ls, 100, 8)
    assert ncalls.recommend(ls, 10_000, 8).startswith("For 10,000 calls at bs 8, use **A**: 7 s in all, against 10 s")
    assert "use **B**" in ncalls.recommend(ls, 1_000_000, 8)
    assert "No configuration" in ncalls.recommend([], 10, 8)


def test_the_figure_highlights_the_lowest_line_and_labels_crossovers():
    fig = ncalls.figure(ncalls.lines(ROWS), 8, 10_000)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert [a.text for a in fig.layout.annotations if a.text.startswith("from")] == [
        "from 4,000 calls:<br>A", "from 20,000 calls:<br>B"]
    lowest = [t for t in fig.data if t.legendgroup == "lowest" and t.x[0] is not None]
    assert [t.name for t in lowest] == ["lowest: eager", "lowest: A", "lowest: B"] and lowest[0].line.width == 5


def test_configuration_names_stay_text_in_the_line_and_the_chart():
    """A configuration's name carries values from workers and model files: shown as typed, never as markup."""
    ls = ncalls.lines([row("**x**<b>y</b>", 2.0, 0.5)])
    assert "\\*\\*x\\*\\*" in ncalls.recommend(ls, 100_000, 8)
    fig = ncalls.figure(ls, 8, 100)
    assert {t.name for t in fig.data} >= {"**x**&lt;b&gt;y&lt;/b&gt;"}
    assert all("<b>" not in a.text for a in fig.layout.annotations)


def test_a_configuration_disturbed_in_every_run_is_a_dotted_grey_line_never_the_lowest_or_recommended():
    """Its row keeps its runs' numbers (lab.answer), flagged: it draws them, marked. Here it would be the lowest line
    from 10 calls on, and it is never taken for it."""
    noisy = {**row("D", 0.001, 0.001), "noisy": True, "job_ids": "7", "runs": 1,
             "noise_note": "other processes used 1.2 of the job's 2 cores during the rounds"}
    ls = ncalls.lines(ROWS + [noisy])
    assert [ln["name"] for ln in ls] == ["eager", "A", "B", "C", "D"] and ls[-1]["noisy"]
    assert [ln["name"] for ln in ncalls.answering(ls)] == ["eager", "A", "B", "C"]
    assert [(ln["name"], round(a)) for ln, a, _ in ncalls.lowest(ncalls.answering(ls), 1e6)] == [
        ("eager", 1), ("A", 4000), ("B", 20000)]
    for n in (1, 100, 10_000, 10**9):
        assert "**D**" not in ncalls.recommend(ls, n, 8)
    assert ncalls.span(ls) == 1e6
    fig = ncalls.figure(ls, 8, 100)
    (line,) = [t for t in fig.data if t.name == "⚠ noisy · D"]
    assert line.line.dash == "dot" and line.line.color == ncalls.NOISY_COLOR and "1.2 of the job" in line.hovertemplate
    assert not any("D" in t.name for t in fig.data if t.legendgroup == "lowest" and t.name.startswith("lowest"))
    assert ncalls.noisy_note(ls).startswith("⚠ noisy, dotted grey and never recommended") and "D (all 1 run" in \
        ncalls.noisy_note(ls)
    # where every configuration was disturbed, they answer (lab.noise.answering), as the answer table's rows do:
    # drawn, the lowest line and the recommendation theirs, the note saying so
    alone = ncalls.lines([noisy, {**row("E", 0.002, 0.002), "noisy": True, "job_ids": "8", "runs": 1,
                                  "noise_note": "another process"}])
    assert [ln["name"] for ln in ncalls.answering(alone)] == ["eager", "D", "E"]
    assert "**D**" in ncalls.recommend(alone, 10**6, 8)
    assert "every run of every configuration here was disturbed" in ncalls.noisy_note(alone)


def test_a_configuration_slower_per_call_never_repays_and_the_chart_reaches_the_n_typed():
    """Compiled slower per call (0.76x): no N repays its compile, and the sentence says so, not "not repaid yet"."""
    ls = ncalls.lines([row("default", 40.0, 1.3, speedup=0.76), row("reduce-overhead", 60.0, 1.1, speedup=0.9)])
    said = ncalls.recommend(ls, 100_000, 32)
    assert said.startswith("For 100,000 calls at bs 32, stay eager: 100 s in all.")
    assert "fastest, reduce\\-overhead, takes 1.1 ms against eager's 1 ms" in said and "no number of calls repays" in said
    assert "not repaid yet" not in said
    fig = ncalls.figure(ls, 32, 100_000)
    assert max(max(t.x) for t in fig.data if t.x and t.x[0] is not None) >= 100_000  # the curves reach the N marker
    assert fig.layout.shapes[0].x0 == 100_000


def test_the_figure_sends_short_numbers():
    """Every visit receives the chart's JSON before it is drawn: plotted numbers carry 4 significant digits, not
    17 (the chart's JSON was twice the size), and the lines still pass through their totals."""
    ls = ncalls.lines(ROWS)
    fig = ncalls.figure(ls, 8, 10_000)
    numbers = [v for t in fig.data if t.x and t.x[0] is not None for v in (*t.x, *t.y)]
    assert numbers and all(len(f"{v:.15g}".lstrip("0.").replace(".", "").rstrip("0")) <= 4 for v in numbers)
    eager = next(t for t in fig.data if t.name == "eager")
    for x, y in zip(eager.x, eager.y):
        assert abs(y - ncalls.total_s(ls[0], x)) <= 1e-3 * y
    assert len(fig.to_json()) < 20_000  # 31.7 kB with every digit
