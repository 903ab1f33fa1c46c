"""A CPU lab: presets scaled to the devices live workers offer (the GPU sizes one click away), and
reduce-overhead folded into default on the CPU, at submit and on Results."""
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
