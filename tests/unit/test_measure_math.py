"""The arithmetic the record is built from: percentiles, break-even, accuracy."""
import logging
import math
from types import SimpleNamespace

import pytest
import torch

from lab.break_even import break_even_calls
from runner.child import accuracy
from runner.child.accuracy import compare, reference
from runner.child.capture.introspect import compile_breakdown
from runner.child.recording import trace_overhead
from runner.child.stats import percentile


def test_percentile_matches_linear_interpolation():
    xs = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(xs, 50) == 3.0
    assert percentile(xs, 10) == pytest.approx(1.4)
    assert percentile(xs, 90) == pytest.approx(4.6)
    assert percentile([7.0], 90) == 7.0


def test_break_even_counts_calls_until_compile_paid_off():
    # compile costs 10.0 s - 0.1 s extra; each call saves 1 ms -> 9900 more calls, +1 for the first call
    assert break_even_calls(0.1, 10.0, 2.0, 1.0) == 9901
    assert break_even_calls(0.1, 10.0, 1.0, 1.0) is None  # never pays off
    assert break_even_calls(0.1, 10.0, 1.0, 2.0) is None  # compiled is slower
    assert break_even_calls(0.5, 0.2, 2.0, 1.0) == 1


def test_compare_reports_relative_error_against_dtype_tolerance():
    ref = [torch.ones(100)]
    same = compare(ref, [torch.ones(100)], "float32", None)
    assert same["ok"] and same["max_abs_error"] == 0.0
    off = compare(ref, [torch.ones(100) * 1.01], "float32", None)
    assert not off["ok"] and off["rel_error"] == pytest.approx(0.01, rel=1e-6)
    assert compare(ref, [torch.ones(100) * 1.01], "bfloat16", None)["ok"]  # within bf16's 3e-2
    nan = torch.ones(100)
    nan[3] = math.nan
    assert not compare(ref, [nan], "float32", None)["ok"]
    assert compare(ref, [torch.ones(3)], "float32", None)["ok"] is False
    skipped = compare(ref, [torch.zeros(100)], "float32", "random by design")
    assert skipped["ok"] is None and skipped["note"] == "random by design"


def test_compare_requires_nonfinite_values_to_match_and_checks_each_tensor():
    inf = torch.tensor([1.0, math.inf, 3.0])
    assert compare([inf], [inf.clone()], "float32", None)["ok"]
    assert not compare([inf], [torch.tensor([1.0, 2.0, 3.0])], "float32", None)["ok"]  # inf vs finite
    assert not compare([inf], [torch.tensor([1.0, -math.inf, 3.0])], "float32", None)["ok"]  # sign
    # a large correct output must not hide a small wrong one (say a bias's gradient)
    big, small = torch.ones(10_000) * 100, torch.ones(4)
    wrong = compare([big, small], [big.clone(), small * 2], "float32", None)
    assert not wrong["ok"] and wrong["rel_error"] == pytest.approx(1.0)


def test_compare_sums_every_chunk_and_the_reference_is_a_copy(monkeypatch):
    monkeypatch.setattr(accuracy, "COMPARE_CHUNK", 7)  # many chunks, the last one short
    ref = torch.arange(1.0, 51.0)
    out = ref.clone()
    out[45] += 1.0  # one wrong value in the last chunk
    got = compare([ref], [out], "float32", None)
    assert got["max_abs_error"] == pytest.approx(1.0)
    assert got["rel_error"] == pytest.approx(1.0 / float(ref.double().square().sum()) ** 0.5)
    odd = ref.clone()
    odd[48] = math.nan
    assert not compare([ref], [odd], "float32", None)["ok"]  # NaN where eager had a number, in a later chunk
    assert compare([odd], [odd.clone()], "float32", None)["ok"]  # NaN at the same place on both sides
    # the reference: a copy (a model that reuses its output buffer must not change it), on the host here
    model = torch.nn.Linear(3, 2)
    model(torch.ones(1, 3)).sum().backward()
    kept = reference(out, model)
    held_on_device = kept.held
    out.zero_()
    model.weight.grad.zero_()
    kept = kept.tensors
    assert held_on_device == 0 and kept[0][45] == 47.0 and len(kept) == 3 and float(kept[1].abs().sum()) > 0


@pytest.mark.slow  # imports torch's compiler in this process (seconds)
def test_graph_break_capture_keeps_the_users_torch_logs(monkeypatch):
    from torch._logging import _internal as logs

    from runner.child.capture.introspect import GraphBreakLog

    monkeypatch.setenv("TORCH_LOGS", "recompiles,+dynamo")  # what a user debugging a model sets
    try:
        GraphBreakLog()
        assert logs.log_state.is_artifact_enabled("graph_breaks")  # ours, for the reasons we record
        assert logs.log_state.is_artifact_enabled("recompiles")  # and theirs, still on
        assert logging.getLogger("torch._dynamo").level == logging.DEBUG  # "+dynamo"
        monkeypatch.delenv("TORCH_LOGS")
        GraphBreakLog()
        assert logs.log_state.is_artifact_enabled("graph_breaks")
        assert not logs.log_state.is_artifact_enabled("recompiles")
    finally:
        torch._logging.set_logs()  # back to torch's defaults for the other tests


def test_the_headline_is_latency_and_the_other_clocks_stand_beside_it():
    """What a GPU job's samples become (the samples are what runner.child.timing's CudaTimer returns; no GPU here):
    speedup is latency's ratio, throughput and GPU time under their own names, and the host overhead is
    the share of a call the GPU idles."""
    from runner.child.stats import clock_fields

    samples = {"eager": [[0.10, 0.11], [0.10]], "compiled": [[0.16], [0.15, 0.17]],  # host-bound: compile is slower
               "eager_throughput": [[0.06], [0.06]], "compiled_throughput": [[0.05], [0.05]],
               "eager_gpu": [[0.03, 0.03], [0.03]], "compiled_gpu": [[0.02], [0.02]]}
    f = clock_fields(samples, gpu=True)
    assert f["eager_ms"] == pytest.approx(0.10) and f["compiled_ms"] == pytest.approx(0.16)
    assert f["speedup"] == pytest.approx(0.10 / 0.16)  # slower, as the caller sees it
    assert f["gpu_speedup"] == pytest.approx(1.5) and f["throughput_speedup"] == pytest.approx(1.2)
    assert f["eager_host_overhead"] == pytest.approx(0.7) and f["compiled_host_overhead"] == pytest.approx(0.875)
    assert f["host_bound"] is True
    assert f["host_note"].startswith("eager leaves the GPU idle 70% of each call: launch-bound; reduce-overhead")
    assert "compiled leaves the GPU idle 88% of each call: dynamo's guards" in f["host_note"]
    assert "reduce-overhead" not in clock_fields(samples, gpu=True, cudagraphs=True)["host_note"].split(";")[0]
    # the numbers never decide whether the run was disturbed (runner.child.disturbance measures that): no such field here
    assert "noisy" not in f and "noise_note" not in f
    assert f["round_speedup"] == pytest.approx(0.10 / 0.16, rel=0.1) and f["round_speedup_se"] is not None
    # the GPU dominates: no note, not host-bound
    busy = {**samples, "eager": [[0.10], [0.10]], "compiled": [[0.16], [0.16]],
            "eager_gpu": [[0.09]], "compiled_gpu": [[0.15]]}  # the GPU idles 10% and 6%: neither bound nor sensitive
    assert clock_fields(busy, gpu=True)["host_bound"] is False and clock_fields(busy, gpu=True)["host_note"] is None
    # the CPU: latency and throughput, no GPU clock, nothing about the host
    cpu = clock_fields({k: v for k, v in samples.items() if not k.endswith("_gpu")}, gpu=False)
    assert cpu["speedup"] == f["speedup"] and cpu["throughput_speedup"] == f["throughput_speedup"]
    assert (cpu["eager_gpu_ms"], cpu["gpu_speedup"], cpu["eager_host_overhead"], cpu["host_bound"]) == (None,) * 4


def test_a_drift_that_slows_both_sides_alike_moves_the_latency_not_the_speedup():
    """Eager and compiled alternate call by call, so a host that slows down for a few rounds slows both: each side's
    round medians spread 40%, their ratio does not, and the process's paired speedup is tight. Noise that hits one
    side's rounds and not the other's moves the ratio: a wider standard error, never a flag (lab.interval)."""
    from runner.child.stats import clock_fields

    slow = [1.0, 1.0, 1.4, 1.4, 1.0, 1.4, 1.0, 1.4]  # the host's speed, round by round
    drift = clock_fields({"eager": [[2.0 * s] for s in slow], "compiled": [[1.0 * s] for s in slow]}, gpu=False)
    assert drift["eager_spread"] == pytest.approx(0.333, abs=0.01) and drift["compiled_spread"] > 0.3
    assert drift["speedup_spread"] == pytest.approx(0.0) and drift["speedup"] == pytest.approx(2.0)
    assert drift["round_speedup"] == pytest.approx(2.0) and drift["round_speedup_se"] == pytest.approx(0.0)
    uneven = clock_fields({"eager": [[2.0 * s] for s in slow], "compiled": [[1.0]] * 8}, gpu=False)
    assert uneven["speedup_spread"] > 0.3 and uneven["round_speedup_se"] > 0.05


class FakeWatch:
    """Counts compiles as dynamo's counter would; `compile_on` names the calls during which one happens."""

    def __init__(self, compile_on=()):
        self.compiles, self.calls, self.compile_on = 0, 0, set(compile_on)

    def count(self):
        return self.compiles

    def call(self):
        self.calls += 1
        if self.calls in self.compile_on:
            self.compiles += 1


def test_cpu_timer_clocks_and_interleaved_rounds():
    from runner.child.rounds import measure_rounds, sample_key
    from runner.child.timing import MIN_BLOCK, CpuTimer

    timer = CpuTimer()
    timer.plan(call_ms=5.0, issue_ms=5.0)  # 20 ms rounds: 4 latency calls, a block of 4
    assert (timer.latency_calls, timer.block_calls) == (4, 4)
    timer.plan(call_ms=100.0, issue_ms=100.0)
    assert (timer.latency_calls, timer.block_calls) == (1, MIN_BLOCK)
    timer.plan(call_ms=1e-6, issue_ms=1e-6)  # the most calls: no call is faster, so the rounds keep this plan
    order = []
    watch = FakeWatch(compile_on={3})  # the third call of the job compiles (a guard failed, say)

    def side(name):
        def fn():
            order.append(name)
            watch.call()
        return fn

    samples = measure_rounds(timer, watch, {"eager": side("eager"), "compiled": side("compiled")}, 4,
                             lambda *_: None, clocks=("latency", "throughput", "gpu"))
    assert set(samples) == {"eager", "compiled", "eager_throughput", "compiled_throughput", "dropped", "host_pace_us"}
    assert len(samples["host_pace_us"]) == 4  # the host's pace, one a round (lab.host_pace)
    assert sample_key("compiled", "gpu") == "compiled_gpu" and sample_key("eager", "latency") == "eager"
    n = timer.latency_calls
    per_round = 2 * (1 + n) + 2 * (1 + timer.block_calls)  # each side's untimed call first
    assert len(order) == 4 * per_round
    # latency alternates call by call, as the harness's timed() loop; the leading side alternates by round
    assert order[:2 + 2 * n] == ["eager", "compiled"] * (1 + n)
    assert order[per_round:per_round + 2 + 2 * n] == ["compiled", "eager"] * (1 + n)
    # the block clocks: one side's block, then the other's, in the round's order
    assert order[2 + 2 * n:per_round] == ["eager"] * (1 + timer.block_calls) + ["compiled"] * (1 + timer.block_calls)
    # the third call of the job (eager's first timed one) compiled: dropped and counted
    assert samples["dropped"] == [{"side": "eager", "clock": "latency", "round": 0, "ms": samples["dropped"][0]["ms"]}]
    assert [len(b) for b in samples["eager"]] == [n - 1] + [n] * 3
    assert all(len(b) == 1 for b in samples["compiled_throughput"])


def test_float64_run_clears_what_rounding_moved_and_still_fails_a_wrong_tensor():
    """A correct compile whose tensor moved past the tolerance by rounding alone (a long reduction summed in another
    order) passes when compiled lies about as close to the float64 truth as eager; a perturbed one fails, named."""
    g = torch.Generator().manual_seed(0)
    truth = torch.randn(1000, generator=g, dtype=torch.float64)
    eager = (truth + torch.randn(1000, generator=g, dtype=torch.float64) * 3e-4).float()
    compiled = (truth + torch.randn(1000, generator=g, dtype=torch.float64) * 3e-4).float()
    names = ["loss", "grad emb.weight"]
    ref = accuracy.Produced(names, [torch.tensor(2.0), eager])
    out = accuracy.Produced(names, [torch.tensor(2.0), compiled])
    wide = accuracy.Produced(names, [torch.tensor(2.0, dtype=torch.float64), truth])
    alone = compare(ref, out, "float32", None, "no float64 run here")
    judged = compare(ref, out, "float32", None, wide)
    wrong = compare(ref, accuracy.Produced(names, [torch.tensor(2.0), compiled + 3e-3]), "float32", None, wide)
    assert alone["rel_error"] > accuracy.TOLERANCE["float32"] and not alone["ok"]
    assert alone["detail"]["reference"] == "none: no float64 run here"
    assert judged["ok"] and judged["detail"]["reference"] == "float64" and judged["detail"]["failing"] == []
    assert judged["detail"]["compared"] == "the loss and 1 parameter gradient"
    assert not wrong["ok"] and wrong["detail"]["failing"] == ["grad emb.weight"]
    worst = wrong["detail"]["worst"]
    assert worst["tensor"] == "grad emb.weight" and worst["compiled_rmse_vs_float64"] > worst["allowed_rmse"]
    assert "grad emb.weight" in wrong["note"]


def test_the_float64_run_is_asked_for_only_where_a_tensor_lies_past_the_tolerance():
    """Inference hands compare a function that runs the float64 call: within allclose it is never run (its cost, a
    model copy and a float64 call, is lab overhead), and the record says so; past it, it runs once and judges."""
    g = torch.Generator().manual_seed(0)
    truth = torch.randn(1000, generator=g, dtype=torch.float64)
    eager = (truth + torch.randn(1000, generator=g, dtype=torch.float64) * 3e-4).float()
    moved = (truth + torch.randn(1000, generator=g, dtype=torch.float64) * 3e-4).float()  # rounding, past 1e-4
    ref = accuracy.Produced(["output 0"], [eager])
    runs = []

    def wide():
        runs.append(1)
        return accuracy.Produced(["output 0"], [truth])

    close = compare(ref, accuracy.Produced(["output 0"], [eager.clone()]), "float32", None, wide)
    assert close["ok"] and runs == [], close
    assert close["detail"]["reference"] == f"none: {accuracy.NOT_NEEDED}"
    assert "every tensor within it (no float64 run needed)" in close["note"]
    judged = compare(ref, accuracy.Produced(["output 0"], [moved]), "float32", None, wide)
    assert runs == [1] and judged["ok"] and judged["detail"]["reference"] == "float64", judged
    wrong = compare(ref, accuracy.Produced(["output 0"], [moved + 3e-3]), "float32", None, wide)
    assert runs == [1, 1] and not wrong["ok"] and wrong["detail"]["failing"] == ["output 0"]


def test_float64_run_follows_the_step_and_says_why_when_it_cannot():
    model = torch.nn.Linear(4, 2)
    x = (torch.randn(3, 4),)

    def make(m, training):
        opt = torch.optim.SGD(m.parameters(), lr=1e-3)

        def step(inputs):
            opt.zero_grad()
            loss = m(*inputs).pow(2).mean()
            loss.backward()
            opt.step()
            return loss.detach()
        return step

    got = accuracy.float64_run(accuracy.pristine(model), x, True, make)
    assert got.names == ["loss", "grad weight", "grad bias"]
    assert all(t.dtype == torch.float64 for t in got.tensors)
    assert model.weight.dtype == torch.float32  # the copy was widened, never the model
    lazy = torch.nn.LazyLinear(2)
    assert "lazy" in accuracy.float64_run(accuracy.pristine(lazy), x, False, make)

    def broken(m, training):
        def step(inputs):
            raise RuntimeError("no float64 kernel\nsecond line")
        return step
    why = accuracy.float64_run(accuracy.pristine(model), x, False, broken)
    assert why == "the model does not run in float64 (RuntimeError: no float64 kernel)"


def test_a_slow_spell_in_the_warm_up_does_not_size_the_rounds():
    """Slow calls as the warm-up begins (lazy work, or another process drawing on the host) ended the old warm-up
    after three calls, and their median was taken for the call's time: rounds of one call a side, 300 of them over in
    a third of a second (a CI run: too short for a page on the host to pause). Settled first, then sized from the
    fastest call of the estimate, stalls there included, the rounds get their full calls. The calls' times are
    scripted (a timer that reports them), so a loaded box cannot move them."""
    from runner.child.rounds import warmup
    from runner.child.timing import MAX_CALLS, CpuTimer

    class Scripted(CpuTimer):
        def __init__(self, slow: set[int], ms: float):
            super().__init__()
            self.slow, self.ms, self.n = slow, ms, 0

        def once_and_issue(self, fn):
            fn()
            self.n += 1
            seconds = (self.ms if self.n in self.slow else 0.2) / 1e3
            return seconds, seconds

    for slow, ms in (({1, 2, 3}, 40.0),  # the settling calls slow
                     ({1, 2, 3, 4, 5}, 60.0)):  # and two stalled calls opening the estimate (three 40 ms: 0.12 s)
        timer = Scripted(slow, ms)
        call_ms, issue_ms = warmup(timer, lambda: None)
        assert call_ms == 0.2 and timer.n >= 6, (slow, call_ms, timer.n)
        timer.plan(call_ms, issue_ms)
        assert timer.latency_calls == MAX_CALLS


def test_rounds_sized_from_a_slowed_warm_up_are_re_planned_from_their_own_calls():
    """A warm-up slowed from outside for all its length (a page on the host drawing as it began: a CI run's 0.1 ms
    step read as 5 ms or more) sized the rounds at a few calls a side, and 300 rounds were over in 0.73 s. The first
    round's own calls re-plan the rest from the slower side's fastest call that did not compile, towards more calls
    only, and the record says so; calls a little faster than planned, or slower, leave the plan alone. The calls'
    times are scripted (a timer that reports them)."""
    from runner.child.rounds import measure_rounds
    from runner.child.timing import MAX_CALLS, CpuTimer

    class Scripted(CpuTimer):
        def __init__(self, ms: dict[str, list[float]], compiled_first: bool = False):
            super().__init__()
            self.ms, self.compiled_first = ms, compiled_first

        def latency(self, fns, watch):  # fns are the sides' names here, in the round's order
            out = []
            for name in fns:
                times = [(t, False) for t in (self.ms[name] * self.latency_calls)[:self.latency_calls]]
                if self.compiled_first:  # the round's first call compiled (fast here, so it would count if read)
                    times[0] = (0.01, True)
                out.append(times)
            self.compiled_first = False
            return out

    def run(timer, rounds):
        return measure_rounds(timer, FakeWatch(), {"eager": "eager", "compiled": "compiled"}, rounds, lambda *_: None)

    # eager's fastest call is 0.25 ms, compiled's 0.2 ms; each side's first call compiled at 0.01 ms, not counted
    timer = Scripted({"eager": [0.4, 0.25], "compiled": [0.3, 0.2]}, compiled_first=True)
    timer.plan(call_ms=7.0, issue_ms=7.0)  # the slowed warm-up's estimate: 2 calls a side
    assert timer.latency_calls == 2
    samples = run(timer, 4)
    assert [len(b) for b in samples["eager"]] == [1, MAX_CALLS, MAX_CALLS, MAX_CALLS]
    assert timer.replans == [{"after_round": 0, "call_ms": 0.25,
                              "before": {"latency": 2, "throughput": 2, "gpu": None},
                              "after": {"latency": MAX_CALLS, "throughput": 80, "gpu": None}}]

    for planned, ms in ((2.0, 1.5),  # a little faster than the warm-up said: a quiet host's spread, not a slow spell
                        (2.0, 20.0)):  # slower: never fewer calls
        steady = Scripted({"eager": [ms], "compiled": [ms]})
        steady.plan(call_ms=planned, issue_ms=planned)
        samples = run(steady, 3)
        assert steady.replans == [] and [len(b) for b in samples["compiled"]] == [10] * 3, (planned, ms)


def test_a_complex_output_is_judged_on_both_its_parts():
    eager = torch.ones(10, dtype=torch.complex64) * (1 + 2j)
    assert compare([eager], [eager.clone()], "float32", None)["ok"]
    off = eager.clone()
    off.imag += 0.5  # the real parts agree: a float64 cast of each side would see no difference
    got = compare([eager], [off], "float32", None)
    assert not got["ok"] and got["max_abs_error"] == pytest.approx(0.5)
    assert compare([eager.conj()], [eager.conj().clone()], "float32", None)["ok"]  # a lazily conjugated view


def _row(compile_id, trace_s, dynamo=None, aot=None, inductor=None, codegen=None):
    """A CompilationMetrics row as torch writes it (times in µs; a column a compile did not run is None)."""
    return SimpleNamespace(compile_id=compile_id, structured_logging_overhead_s=trace_s,
                           dynamo_cumulative_compile_time_us=dynamo, aot_autograd_cumulative_compile_time_us=aot,
                           inductor_cumulative_compile_time_us=inductor,
                           inductor_code_gen_cumulative_compile_time_us=codegen)


def test_a_training_steps_backward_row_takes_nothing_off_the_forwards_aot_and_its_trace_total_counts_once():
    # a tiny MLP's training step on this CPU, torch 2.13: the forward's row, then the backward's, compiled lazily
    # under the same compile id, with no dynamo or AOT time, and torch's trace total so far (forward's included)
    rows = [_row("0/0", 0.013131, dynamo=1_708_969, aot=1_410_074, inductor=611_591),
            _row("0/0", 0.020327, inductor=1_038_406, codegen=936_285)]
    assert trace_overhead(rows) == pytest.approx(0.020327)  # not 0.033458: the backward's row holds the forward's
    assert trace_overhead(rows + [_row("!0/1/0", 0.004), _row("1/0", 0.003)]) == pytest.approx(0.024327)
    parts = compile_breakdown(rows, 4.0)
    assert parts["aot autograd"] == pytest.approx(1.410074 - 0.611591)  # the forward's inductor only
    assert parts["dynamo tracing"] == pytest.approx(1.708969 - 1.410074)
    assert parts["inductor lowering"] == pytest.approx(0.611591 + (1.038406 - 0.936285))
    assert parts["codegen + kernel compile"] == pytest.approx(0.936285)
    assert sum(parts.values()) == pytest.approx(4.0)
    less = compile_breakdown(rows, 4.0, {"aot autograd": 0.01, "inductor lowering": 0.02})
    assert less["aot autograd"] == pytest.approx(parts["aot autograd"] - 0.01)
    assert less["other (run, guards)"] == pytest.approx(parts["other (run, guards)"] + 0.03)
    # the phases (less the parts' own trace shares) fill more than the call less the lab's whole trace share: what
    # is over is the lab's, unattributed, and comes off the largest part; the parts still add up to the call
    tight = sum(v for k, v in parts.items() if k != "other (run, guards)") - 0.002
    over = compile_breakdown(rows, tight)
    assert sum(over.values()) == pytest.approx(tight, abs=1e-9) and over["other (run, guards)"] == 0.0
    largest = max((k for k in parts if k != "other (run, guards)"), key=parts.get)
    assert over[largest] == pytest.approx(parts[largest] - 0.002)
    assert all(over[k] == pytest.approx(parts[k]) for k in parts if k not in (largest, "other (run, guards)"))
