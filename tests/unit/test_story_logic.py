"""The compiler's story as plain values: kernel calls counted in a generated wrapper, and the sentence that says
why a job's compiled first call cost what it did."""
from dashboard.data import story
from runner.child.capture.trace import generated_kernel_calls

WRAPPER = '''
cpp_fused_add_cos_sin_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r\'\'\'
extern "C" void kernel(const float* in_ptr0, float* out_ptr0) { }
\'\'\')
triton_poi_fused_1 = async_compile.triton('triton_poi_fused_1', \'\'\'
def triton_poi_fused_1(in_ptr0, xnumel): pass
\'\'\')

class Runner:
    def call(self, args):
        arg0_1, = args
        buf0 = empty_strided_cpu((8, 10000), (10000, 1), torch.float32)
        cpp_fused_add_cos_sin_0(arg0_1, buf0)
        extern_kernels.addmm(arg0_1, buf0, buf0, alpha=1, beta=1, out=buf1)
        triton_poi_fused_1.run(buf1, 80000, stream=stream0)
        cpp_fused_add_cos_sin_0(buf1, buf0)
        return (buf0, )
'''


def test_generated_kernel_calls_counts_calls_in_call_not_definitions_or_extern_kernels():
    assert generated_kernel_calls(WRAPPER) == 3
    assert generated_kernel_calls("x = 1\n") == 0


def test_why_a_warm_job_paid_names_the_layer_that_missed_and_a_full_hit_names_what_remains():
    warm = {"cache": "warm", "backend": "inductor", "compiled_first_call_s": 12.0,
            "cache_layers": {"fxgraph": {"hit": 0, "miss": 1, "bypass": 0},
                             "aotautograd": {"hit": 1, "miss": 0, "bypass": 0}}}
    said = story.why_it_paid(warm)
    assert said.startswith("A warm job, yet the first call (12 s) compiled: fxgraph: 1 miss, 0 bypass")
    assert "aotautograd" not in said
    hit = {**warm, "compiled_first_call_s": 2.5, "compile_breakdown_s": {"dynamo tracing": 1.25},
           "cache_layers": {"fxgraph": {"hit": 1, "miss": 0, "bypass": 0},
                            "aotautograd": {"hit": 1, "miss": 0, "bypass": 0}}}
    assert story.why_it_paid(hit) == ("Every graph came from the cache (fxgraph, aotautograd hit); the first call "
                                      "(2.5 s) still paid dynamo's tracing and guards (1.25 s) and loading the "
                                      "compiled code.")
    assert story.why_it_paid({"cache_layers": {}}) is None
    assert story.kernels_line({"eager_kernels": 3, "compiled_kernels": 1}) == "3 → 1 kernels per call (-2)"


def test_the_autotuner_picks_line_names_a_few_and_counts_the_rest_and_is_absent_without_picks():
    picks = {"count": 8, "picks": {f"k{i}/abc{i}": {"XBLOCK": 1024 >> i, "num_warps": 4} for i in range(8)}}
    line = story.picks_line({"autotune_picks": picks})
    assert line.startswith("This process's autotuner picked the launch settings of 8 kernels in its first call")
    assert "k0/abc0: XBLOCK 1024, num_warps 4" in line and "k5/abc5" in line and "k6/abc6" not in line
    assert "(and 2 more)" in line
    one = story.picks_line({"autotune_picks": {"count": 1, "picks": {"ji/x": {"XBLOCK": 512}}}})
    assert "of 1 kernel in" in one and "more" not in one
    assert story.picks_line({"autotune_picks": {"count": 0, "picks": {}}}) is None
    assert story.picks_line({}) is None and story.picks_line({"autotune_picks": None}) is None
    for odd in ([1, 2], "picks", {"count": "3"}, {"count": True}, {"count": 2, "picks": [1]}):
        line = story.picks_line({"autotune_picks": odd})  # a hand-made row: a line or none, never a crash
        assert line is None or line.startswith("This process's autotuner picked the launch settings of 2 kernels")
    assert "k: 5" in story.picks_line({"autotune_picks": {"count": 1, "picks": {"k": 5}}})
