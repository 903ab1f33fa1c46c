"""lab.packing: every float of the samples comes back bit for bit, whatever rule packed it; what is not a list of
floats comes back as it was; a realistic result packs in a small part of its JSON; bytes it cannot read are refused."""
import json
import math
import struct
import zlib

import numpy as np
import pytest

from bench import synthetic_raw
from lab import packing


def bits(value) -> object:
    """A JSON value with each float as its float64 bits: equal only when every float is the same bit for bit."""
    if isinstance(value, float):
        return ("f", struct.pack("<d", value))
    if isinstance(value, dict):
        return {k: bits(v) for k, v in value.items()}
    if isinstance(value, list):
        return [bits(v) for v in value]
    return (type(value).__name__, value)


def rules(blob: bytes) -> dict:
    """How each packed array was kept: key -> (rule, values kept as float64 exceptions)."""
    payload = zlib.decompress(blob[1:])
    (size,) = struct.unpack_from("<I", payload)
    return {e[0]: (e[3]["r"], e[3].get("x")) for e in json.loads(payload[4:4 + size]) if e[1] != "json"}


def realistic(seed: int, gpu: bool = True, diagnose: bool = True) -> dict:
    gen = np.random.default_rng(seed)
    result = {"eager_ms": 0.21, "compiled_ms": 0.16, "eager_spread": 0.01, "compiled_spread": 0.02,
              "eager_gpu_ms": 0.08, "compiled_gpu_ms": 0.05, "eager_throughput_ms": 0.15, "compiled_throughput_ms": 0.1}
    return synthetic_raw.samples(gen, result, 30, gpu, diagnose)[0]


@pytest.mark.parametrize("gpu,diagnose", [(True, True), (True, False), (False, True)])
def test_realistic_samples_come_back_bit_for_bit_in_a_tenth_of_their_json(gpu, diagnose):
    samples = realistic(1, gpu, diagnose)
    blob = packing.pack_samples(samples)
    back = packing.unpack_samples(blob)
    assert bits(back) == bits(samples)
    assert list(back) == list(samples)  # the keys in their order
    assert json.dumps(back) == json.dumps(samples)  # what an export writes
    assert len(blob) < len(json.dumps(samples)) / 8
    # each clock by its own rule, and no value left over as float64 bits
    kept = rules(blob)
    assert kept["eager"] == kept["compiled"] == ("t", 0)
    if gpu and diagnose:
        assert kept["eager_gpu"] == kept["compiled_gpu"] == ("g", 0)
        assert kept["eager_throughput"] == ("t", 0)


def test_a_host_up_for_years_or_minutes_and_a_block_of_any_size_pack_exactly():
    """perf_counter's last place follows the host's uptime: coarse after years (coarser than a nanosecond), fine after
    seconds; a throughput block divides by its own calls."""
    gen = np.random.default_rng(3)
    for uptime_s in (30.0, 4 * 86400.0, 3 * 365 * 86400.0):
        for block in (1, 3, 77, 100):
            ms = 0.05 + np.abs(gen.normal(0, 0.01, (30, 1 if block > 1 else 25)))
            x = synthetic_raw.host_clock_ms(gen, ms, int(uptime_s * 1e9), block).tolist()
            back = packing.unpack_samples(packing.pack_samples({"eager": x}))["eager"]
            assert bits(back) == bits(x), (uptime_s, block)
            assert rules(packing.pack_samples({"eager": x}))["eager"] == ("t", 0), (uptime_s, block)


def test_values_off_the_rule_are_kept_as_they_are():
    """A value no clock made among values one did (a crossed binade, a hand-made row), floats no rule fits, and
    the floats that are not numbers: each back bit for bit."""
    gen = np.random.default_rng(5)
    on_grid = synthetic_raw.host_clock_ms(gen, 0.3 + gen.random((4, 10)) * 0.01, 4 * 86400 * 10**9).tolist()
    on_grid[2][3] = 0.1 + 0.2
    on_grid[0][0] = -0.0
    random_floats = gen.random((3, 7)).tolist()
    gpu = synthetic_raw.event_clock_ms(np.full((2, 9), 0.02) + gen.random((2, 9)) * 1e-3).tolist()
    gpu[1][1] = 0.1  # not a float32
    specials = [[math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308, 0.0]]
    samples = {"eager": on_grid, "compiled": random_floats, "eager_gpu": gpu, "odd": specials}
    blob = packing.pack_samples(samples)
    assert bits(packing.unpack_samples(blob)) == bits(samples)
    kept = rules(blob)
    assert kept["eager"] == ("t", 2) and kept["compiled"][0] == "f64" and kept["eager_gpu"] == ("g", 1)


def test_what_is_not_a_list_of_floats_stays_as_it_was():
    """An int or a bool in a list would come back a float if packed as numbers: such lists stay JSON; so do empty
    lists, strings, nested objects and the dropped calls."""
    samples = {"ints": [[1, 2], [3]], "bools": [[True, False]], "mixed": [[1.5, 2]], "flat": [0.5, 0.25],
               "empty": [], "empty_rounds": [[], [0.5], []], "no_calls": [[], []], "note": "kept",
               "nested": {"a": [1.5, {"b": None}]}, "big": 2**70,
               "dropped": [{"side": "compiled", "clock": "latency", "round": 3, "ms": 412.53}]}
    back = packing.unpack_samples(packing.pack_samples(samples))
    assert bits(back) == bits(samples)
    assert packing.unpack_samples(packing.pack_samples({})) == {} and packing.unpack_samples(None) == {}


def test_a_detail_comes_back_as_it_was_in_about_half_of_its_zlib():
    import random

    detail = synthetic_raw.detail(random.Random(2), {"compiled_first_call_s": 4.0, "eager_ms": 0.2, "flops": 1e6,
                                                     "min_bytes": 2e6}, {"mode": "default"}, None, True)
    detail |= {"unicode": "résultat ✓", "big": 2**70, "none": None, "neg": -1.5e-7}
    blob = packing.pack_json(detail)
    assert bits(packing.unpack_json(blob)) == bits(detail)
    assert len(blob) < 0.7 * len(zlib.compress(json.dumps(detail).encode(), 6))
    assert packing.unpack_json(None, {}) == {} and packing.unpack_json(b"", []) == []


def test_bytes_it_cannot_read_are_refused_naming_why():
    blob = packing.pack_samples(realistic(4))
    with pytest.raises(packing.PackError, match="format 9"):
        packing.unpack_samples(b"\x09" + blob[1:])
    with pytest.raises(packing.PackError, match="damaged"):
        packing.unpack_samples(blob[:40])
    with pytest.raises(packing.PackError, match="format 1"):
        packing.unpack_json(blob)
