"""A CPU lab: presets scaled to the devices live workers offer (the GPU sizes one click away), and
reduce-overhead folded into default on the CPU, at submit and on Results."""
import pyarrow as pa
import pytest

from db import queue
from db.results import export_records
from runner import zoo
from tests.dashboard.test_pages import lab, ok, page, texts, worker  # noqa: F401  (fixtures)


def test_a_cpu_lab_gets_cpu_sizes_and_the_gpu_sizes_one_click_away(worker):  # noqa: F811 (the fixture)
    at = ok(page("submit", preset="modes"))
    assert at.number_input(key="f_arg_complexnet_image_size").value == 96 and at.text_input(key="f_batch").value == "8"
    assert any("scaled to finish on a CPU" in t and "image_size 224 → 96" in t and "batch 32 → 8" in t
               for t in texts(at.caption))
    # reduce-overhead is default on the CPU: one job for the pair, and the form says why
    assert any("3 jobs" not in t and "2 jobs will be created" in t for t in texts(at.markdown))
    assert any("reduce-overhead on cpu is default" in t and "one default job runs for both" in t
               for t in texts(at.caption))
    ok(at.toggle(key="preset_gpu_sizes").set_value(True).run())
    assert at.number_input(key="f_arg_complexnet_image_size").value == 224 and at.text_input(key="f_batch").value == "32"
    ok(at.toggle(key="preset_gpu_sizes").set_value(False).run())
    assert at.number_input(key="f_arg_complexnet_image_size").value == 96
    ok(at.button(key="f_submit").click().run())
    stored = export_records(worker)
    assert sorted((r["mode"], r["batch_size"], r["model_args"]["image_size"]) for r in stored) == [
        ("default", 8, 96), ("max-autotune", 8, 96)]


def test_a_gpu_lab_gets_the_seed_sizes_and_no_toggle(lab):  # noqa: F811 (the fixture)
    models = [info.to_dict() for info in zoo.model_infos(zoo.catalog()).values()]
    queue.register_worker(lab, "gpuhost:1:gpu0:test", "gpuhost", 1, "0",
                          {"devices": ["cuda", "cpu"], "device_name": "NVIDIA H100 80GB HBM3",
                           "torch_version": "2.13.0", "models": models})
    at = ok(page("submit", preset="modes"))
    assert at.number_input(key="f_arg_complexnet_image_size").value == 224 and at.selectbox(key="f_device").value == "cuda"
    assert not at.toggle and any("3 jobs will be created" in t for t in texts(at.markdown))


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_compare_on_the_cpu_shows_reduce_overhead_as_default_with_the_results_note(lab):  # noqa: F811 (the fixture)
    """Two CPU sweeps that each stored a default and a reduce-overhead job (stored before the submit fold, or by an
    older worker): Compare matches them as one configuration, default, with the note Results shows."""
    from bench.synthetic import fill

    fill(lab, 6, seed=3, device="cpu", models=("simplenet",), batches=(8,), dynamics=(False,),
         modes=("default", "reduce-overhead"))
    assert sorted(r["mode"] for r in export_records(lab) if r["sweep_id"] in (1, 2)) == [
        "default", "default", "reduce-overhead", "reduce-overhead"]
    at = ok(page("compare", a="1", b="2"))
    spec = at.dataframe[0].value  # the Styler's frame
    assert spec.loc[spec["field"] == "modes", ["A", "B"]].values.tolist() == [["default", "default"]]
    numbers = at.dataframe[2].value
    assert set(numbers["mode"]) == {"default"} and len(numbers) == len(set(numbers["metric"]))  # one combination
    notes = [t.replace("\\", "") for t in texts(at.caption) if "stored as reduce\\-overhead" in t]  # md-escaped
    assert notes and "shown under default" in notes[0] and "same compile, since CUDA graphs need CUDA" in notes[0]
    (chart,) = [c for c in at.get("vega_lite_chart") if "A vs B" in c.proto.spec]
    bars = [pa.ipc.open_stream(d.data.data).read_all().to_pydict() for d in chart.proto.datasets]
    labels = {label for data in bars for label in data.get("label", [])}
    assert labels and all("default" in label and "reduce-overhead" not in label for label in labels)  # the mode ran

    runs = ok(page("compare", kind="runs", ja="1", jb="2"))
    assert "reduce-overhead" not in runs.selectbox(key="jb").format_func(2)
    spec = runs.dataframe[0].value
    assert spec.loc[spec["field"] == "mode", ["A", "B"]].values.tolist() == [["default", "default"]]
    assert any("1 job stored as reduce-overhead is shown under default" in t.replace("\\", "")
               for t in texts(runs.caption))


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_the_results_mode_filter_offers_and_matches_the_mode_a_cpu_job_ran(lab):  # noqa: F811 (the fixture)
    """On the CPU the mode filter lists default, not reduce-overhead, and default keeps the jobs stored as
    reduce-overhead that the plots draw under it."""
    from bench.synthetic import fill

    fill(lab, 6, seed=3, device="cpu", models=("simplenet",), batches=(8,), dynamics=(False,),
         modes=("default", "reduce-overhead"))
    at = ok(page("results"))
    assert at.multiselect(key="mode").options == ["default"]
    at = ok(page("results", plot="simplenet"))  # the N-calls chart (the default) says it too, under its chart
    assert [c.key for c in at.get("plotly_chart")] == ["plot_ncalls"]
    assert any("stored as reduce\\-overhead" in t and "shown under default" in t for t in texts(at.caption))
    assert "reduce-overhead" not in at.get("plotly_chart")[0].proto.spec  # its lines are named by the mode that ran
    at = ok(page("results", mode="default", plot="simplenet", chart="Speedup"))
    assert at.metric[0].value == "6"  # every job, the four simplenet ones stored as either mode
    assert any("stored as reduce\\-overhead" in t for t in texts(at.caption))
