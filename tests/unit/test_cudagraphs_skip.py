"""Why CUDA graphs were skipped comes from torch's own message (on torch 2.11 the compilation metrics did not
carry it: an H100 job with an input mutation read skipped=true with no reason). Torch's logging call is real;
no GPU is needed to emit it."""
import pytest


@pytest.mark.slow  # imports torch's compiler in this process (seconds)
def test_a_skip_message_becomes_the_recorded_reason():
    from torch._inductor.cudagraph_utils import log_cudagraph_skip_and_bump_counter

    from runner.child.capture import cudagraphs, introspect

    introspect._enable_graph_break_logs()
    cudagraphs.listen()
    cudagraphs._SKIPS.clear()
    log_cudagraph_skip_and_bump_counter("skipping cudagraphs due to mutated inputs (1 instances)")
    health = cudagraphs.health([], None)
    assert health["skipped"] is True
    assert health["skip_reasons"] == ["skipping cudagraphs due to mutated inputs (1 instances)"]
