"""Host ops and the CPU's kernel count read from the profiler's raw events: each aten op once (a redispatch that
records the same op inside itself is one op), the outermost ones per thread, device activities apart."""
from runner.child.capture.profile_counts import Event, _host_ops


def ev(name, start, end, thread=1, device=False):
    return Event(name, device, thread, start, end)


def test_nesting_by_time_per_thread_and_a_redispatch_counted_once():
    events = [
        ev("aten::linear", 0, 100), ev("aten::t", 1, 10), ev("aten::addmm", 11, 90),
        ev("aten::div", 100, 150), ev("aten::div", 101, 149),  # the same op recorded again inside itself
        ev("Optimizer.step#SGD.step", 200, 300), ev("aten::add_", 210, 220), ev("aten::add_", 230, 240),
        ev("aten::relu", 0, 50, thread=2), ev("aten::clamp_min", 5, 45, thread=2),
        ev("void kernel<float>", 20, 30, device=True),  # a GPU activity: no host op
    ]
    ops, outermost = _host_ops(events)
    assert sorted(e.name for e in ops) == sorted(["aten::linear", "aten::t", "aten::addmm", "aten::div",
                                                  "aten::add_", "aten::add_", "aten::relu", "aten::clamp_min"])
    # linear, div, the two add_ (inside a record_function range, not inside an aten op), relu on the other thread
    assert outermost == 5


def test_an_op_starting_where_another_ends_is_not_inside_it():
    ops, outermost = _host_ops([ev("aten::mul", 0, 10), ev("aten::add", 10, 20), ev("aten::sum", 20, 20)])
    assert len(ops) == 3 and outermost == 3
