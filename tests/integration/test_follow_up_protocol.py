"""One configuration's first run and a follow-up process go through measure.run's one line (runner.child.measure):
the first run with every step, the follow-up with the headline clock alone. Real torch.compile of a tiny model on
the CPU, in this process (as `--spawn inline` runs a job)."""
from lab.spec import ExperimentSpec
from lab.timeline import Phases
from runner import zoo
from runner.child import measure


def _names(phases: Phases) -> set[str]:
    return {iv["phase"] for iv in phases.intervals}


def _when_measured(phases: Phases, heard: list):
    """A `measured` that notes which of the phases that matter here had run when it was called."""
    return lambda: heard.append(_names(phases) & {"rounds", "profiler", "FLOP count", "schedule", "record"})


def test_the_next_child_may_start_once_nothing_more_is_timed(tmp_path):
    """A first run with nothing timed after its rounds says so before its analyses (which count, not time), so the
    next job's child makes its CUDA context beside them (runner.child.prewarm)."""
    entry = zoo.resolve("mlp")
    spec = ExperimentSpec.from_dict({"model": "mlp", "batch_size": 4, "device": "cpu", "iters": 2,
                                     "backend": "eager"}).check_model(zoo.model_infos({"mlp": entry}))
    phases = Phases()
    measure.run(spec, entry, lambda *_: None, tmp_path / "first", phases, measured=_when_measured(phases, heard := []))
    assert heard == [{"rounds"}] and {"profiler", "FLOP count", "record"} <= _names(phases)


def test_a_follow_up_times_the_headline_alone_and_the_first_run_every_step(tmp_path):
    entry = zoo.resolve("mlp")
    spec = ExperimentSpec.from_dict({"model": "mlp", "batch_size": 4, "device": "cpu", "iters": 2, "schedule": [2],
                                     "cache": "warm"}).check_model(zoo.model_infos({"mlp": entry}))
    said: list[str] = []

    first_phases = Phases()
    first = measure.run(spec, entry, lambda what, _: said.append(what), tmp_path / "first", first_phases,
                        measured=_when_measured(first_phases, heard := []))
    assert heard == [{"schedule", "profiler", "FLOP count", "rounds"}]  # its schedule's calls are timed: after them
    assert {"profiler", "FLOP count", "schedule", "artifacts", "record"} <= _names(first_phases)
    assert "counting kernels" in said and "schedule" in said
    assert first.flops is not None and [c["size"] for c in first.schedule] == [2]
    assert first.accuracy_ok is not None and "follow_up_protocol" not in first.detail
    assert "mega_cache" in first.detail and "work_cached" in first.detail
    assert (tmp_path / "first").is_dir()
    built = first.detail["model_build"]  # where the build's seconds went: parts of the phase, each once
    assert built["weights_made"] == "on the host (a CPU job)"
    assert list(built["seconds"]) == ["setup", "weights", "copy", "to device and dtype", "inputs",
                                      "the compiled wrapper and steps"]
    (phase,) = [iv["end"] - iv["start"] for iv in first_phases.intervals if iv["phase"] == "model build"]
    assert 0 < sum(built["seconds"].values()) <= phase + 0.01

    again_phases = Phases()
    again = measure.run(spec, entry, lambda *_: None, tmp_path / "again", again_phases,
                        measure.Role(repeat=True, cache_from_first_run=True),
                        measured=_when_measured(again_phases, heard := []))
    assert heard == [{"rounds"}]  # the headline's rounds done, its record not yet made
    names = _names(again_phases)
    assert {"compiler setup", "model build", "eager first call", "compiled first call", "rounds", "record"} <= names
    assert not names & {"profiler", "FLOP count", "schedule", "artifacts", "traffic"}
    assert again.flops is None and again.schedule == [] and again.accuracy_ok is None
    assert again.first_call_cache == "warm" and again.samples_per_side > 0
    assert again.detail["follow_up_protocol"].startswith("the headline clock only")
    assert "mega_cache" not in again.detail and "work_cached" not in again.detail
    assert not (tmp_path / "again").exists()  # a follow-up keeps no artifacts: its first run has them
