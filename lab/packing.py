"""A result's raw material as bytes: the per-round samples as numbers, exactly, and JSON values compressed. One codec
writes what db stores and reads it back (db.models' column types call it); pure Python and numpy.

What the samples are made of decides how they pack. A latency sample is `(perf_counter() - t0) * 1e3`, and
perf_counter is an integer count of nanoseconds divided by 1e9 (CPython), so the difference of two readings is an
integer k of the readings' last place (2**e seconds, e from the host's uptime) and the sample is that times 1000,
rounded once: k is recovered exactly from the sample, and k itself is the nanoseconds between the readings times
2**-e / 1e9, give or take one, so it is kept as those nanoseconds and a remainder of -1, 0 or 1. A throughput sample
is such a difference divided by the block's calls n, which is found the same way. A GPU sample is CUDA's float32
milliseconds between two events whose clock ticks in whole nanoseconds (32 on an H100 and H200). Each of these is
checked value by value: a sample the rule does not rebuild bit for bit is kept as its float64 bits, and an array
that no rule fits is kept as float64 bits entire. So every float comes back bit for bit (NaN, infinities and -0.0
too), and what is not a list of floats (the dropped calls) is kept as JSON. Integers are stored as byte planes
(the high bytes of nearby values repeat, and zlib finds that) and the whole is zlib-compressed.

On real configurations' samples on an H200 (bench.gpu_samples) this keeps 65 kB of JSON text in 5.8 kB, 15 kB in
2.4 kB: ~2.4 bytes a latency sample (its nanoseconds' scatter and the remainder are what is left), ~1 byte a GPU
sample.
"""
from __future__ import annotations

import json
import struct
import zlib

import numpy as np

SAMPLES_FORMAT = 1  # the first byte of a packed samples value
JSON_FORMAT = 2  # the first byte of a packed JSON value
LEVEL = 6  # zlib's: 9 packs ~1% smaller at twice the time
MS = 1000.0  # host clock samples are seconds times this
PROBE = 8  # values a clock place is tried on before the whole array is
DIVISORS = np.arange(1, 129, dtype=np.float64)  # a throughput block's calls (runner.child.timing.MAX_BLOCK is 100)
EXPONENTS = np.arange(-16, -75, -1)  # the host clock's last place: 2**-16 s (a clock 2**37 s old) to 2**-74 s
TICKS_NS = (32, 1, 1000)  # a GPU event clock's tick, in ns, tried in this order


class PackError(ValueError):
    """A packed value this code cannot read (a newer format, or damaged bytes)."""


# -- samples ---------------------------------------------------------------------------------------------------------

def pack_samples(samples: dict | None) -> bytes:
    """The samples dict as bytes: each list of lists of floats (or list of floats) as numbers, the rest as JSON."""
    entries, sections = [], []
    for key, value in (samples or {}).items():
        shape = _float_shape(value)
        if shape is None:
            entries.append([key, "json", value])
            continue
        lengths, flat = shape
        meta, data = _encode(np.array(flat, dtype=np.float64))
        entries.append([key, "rows" if lengths is not None else "flat", lengths, meta, len(data)])
        sections.append(data)
    header = json.dumps(entries, separators=(",", ":")).encode()
    return bytes([SAMPLES_FORMAT]) + zlib.compress(struct.pack("<I", len(header)) + header + b"".join(sections), LEVEL)


def unpack_samples(blob: bytes | memoryview | None) -> dict:
    """pack_samples' dict back, every float bit for bit, keys in their order. Empty bytes (or None): {}."""
    if not blob:
        return {}
    blob = bytes(blob)
    if blob[0] != SAMPLES_FORMAT:
        raise PackError(f"packed samples of format {blob[0]}, which this code does not read")
    try:
        payload = zlib.decompress(blob[1:])
        (size,) = struct.unpack_from("<I", payload)
        entries = json.loads(payload[4:4 + size])
    except (zlib.error, struct.error, ValueError) as e:
        raise PackError(f"damaged packed samples: {e}") from None
    out, at = {}, 4 + size
    for entry in entries:
        if entry[1] == "json":
            out[entry[0]] = entry[2]
            continue
        key, kind, lengths, meta, nbytes = entry
        values = _decode(meta, payload[at:at + nbytes]).tolist()
        at += nbytes
        if kind == "flat":
            out[key] = values
        else:
            ends = np.cumsum(lengths).tolist()
            out[key] = [values[end - n:end] for n, end in zip(lengths, ends)]
    return out


def _float_shape(value) -> tuple[list[int] | None, list[float]] | None:
    """(row lengths or None for a flat list, the floats) when `value` is a list of lists of floats or a non-empty list
    of floats; else None. Only floats: an int or a bool would come back a float, so such a list stays JSON."""
    if not isinstance(value, list) or not value:
        return None
    if all(type(v) is float for v in value):
        return None, value
    if not all(type(r) is list for r in value):
        return None
    flat = [v for r in value for v in r]
    if not all(type(v) is float for v in flat):
        return None
    return [len(r) for r in value], flat


# -- one array of floats ---------------------------------------------------------------------------------------------

def _encode(x: np.ndarray) -> tuple[dict, bytes]:
    """(how, bytes) for float64 array x, by the first rule that rebuilds most of it; the values it misses kept as
    exceptions (their positions and float64 bits)."""
    if not len(x):
        return {"r": "f64", "n": 0}, b""
    with np.errstate(all="ignore"):  # 7 in 8 float32 values: a GPU clock's, first
        float32 = (x.astype(np.float32).astype(np.float64).view(np.int64) == x.view(np.int64)).mean() >= 7 / 8
    for attempt in (_event_clock, _host_clock) if float32 else (_host_clock,):
        got = attempt(x)
        if got is not None:
            meta, ints, rebuilt = got
            missed = np.flatnonzero(rebuilt.view(np.int64) != x.view(np.int64))
            if len(missed) <= len(x) // 8:
                kept = np.ones(len(x), dtype=bool)
                kept[missed] = False
                for i in ints:  # a missed value's integers are not read back: the kept ones' smallest packs best
                    i[missed] = i[kept].min() if kept.any() else 0
                data = b"".join(_planes(i, m) for i, m in zip(ints, _int_meta(meta, ints)))
                meta["x"] = len(missed)
                return meta, data + missed.astype("<u4").tobytes() + x[missed].astype("<f8").tobytes()
    return {"r": "f64", "n": len(x)}, _planes_raw(x.view(np.uint64), 8)


def _decode(meta: dict, data: bytes) -> np.ndarray:
    rule, n = meta["r"], meta["n"]
    if rule == "f64":
        return _unplanes_raw(data, n, 8).view(np.float64)
    at, ints = 0, []
    for base, width in meta["i"]:
        ints.append(_unplanes(data[at:at + width * n], n, base, width))
        at += width * n
    x = _rebuild_host(meta, *ints) if rule == "t" else _rebuild_event(meta, *ints)
    missed = meta["x"]
    if missed:
        where = np.frombuffer(data, dtype="<u4", count=missed, offset=at)
        x[where] = np.frombuffer(data, dtype="<f8", count=missed, offset=at + 4 * missed)
    return x


def _host_clock(x: np.ndarray):
    """x = (k * 2**e) * 1000 / n, k an integer: a host clock difference in ms over n calls. Returns (meta, [ns, rem],
    rebuilt x) or None."""
    values = x[np.isfinite(x) & (x > 0)]
    if not len(values):
        return None
    found = _grid(values, np.array([1.0])) or _grid(values, DIVISORS)
    if found is None:
        return None
    e, n = found
    with np.errstate(all="ignore"):
        k = np.rint(x * n / (MS * 2.0 ** e))
        k[~np.isfinite(k) | (np.abs(k) >= 2.0 ** 52)] = 0
    per_ns = 2.0 ** -e / 1e9  # the clock's last places in a nanosecond
    if per_ns >= 2:  # k = round(ns * per_ns) + rem: the nanoseconds and the remainder pack smaller than k
        ns = np.rint(k / per_ns)
        rem = k - np.rint(ns * per_ns)
    else:
        ns, rem, per_ns = k, np.zeros_like(k), 0.0
    meta = {"r": "t", "n": len(x), "e": e, "d": n, "p": per_ns}
    return meta, [ns.astype(np.int64), rem.astype(np.int64)], _rebuild_host(meta, ns.astype(np.int64),
                                                                           rem.astype(np.int64))


def _rebuild_host(meta: dict, ns: np.ndarray, rem: np.ndarray) -> np.ndarray:
    per_ns = meta["p"]
    k = (np.rint(ns * per_ns) + rem) if per_ns else ns.astype(np.float64)
    x = (k * 2.0 ** meta["e"]) * MS
    return x / meta["d"] if meta["d"] != 1 else x


def _grid(values: np.ndarray, divisors: np.ndarray) -> tuple[int, int] | None:
    """The clock place 2**e and block size n (of `divisors`) that rebuild 7 in 8 of `values` at least in the smallest
    integers (k ~ x * n / 2**e), as ints; of equals ((e + 1, 2n) rebuilds what (e, n) does), the fewest calls. Every
    (n, e) is tried on the first value, the few that rebuild it on the others."""
    d, e = np.nonzero(_rebuilds(values[:1, None], divisors[:, None], EXPONENTS[None, :]))
    if not len(d):
        return None
    hits = _rebuilds(values[:PROBE, None], divisors[d][None, :], EXPONENTS[e][None, :]).sum(axis=0)
    enough = hits >= min(len(values), PROBE) * 7 / 8
    d, e = d[enough], e[enough]
    if len(d):
        enough = _rebuilds(values[:, None], divisors[d][None, :], EXPONENTS[e][None, :]).sum(axis=0) >= len(values) * 7 / 8
        d, e = d[enough], e[enough]
    if not len(d):
        return None
    size = np.log2(divisors[d]) - EXPONENTS[e]
    best = np.lexsort((d, size))[0]
    return int(EXPONENTS[e[best]]), int(divisors[d[best]])


def _rebuilds(x: np.ndarray, n: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Whether (k * 2**e) * 1000 / n, k = x * n / (1000 * 2**e) rounded, is x bit for bit (broadcast), k < 2**52."""
    with np.errstate(all="ignore"):
        place = 2.0 ** e.astype(np.float64)
        k = np.rint(x * n / (MS * place))
        rebuilt = (k * place) * MS / n
    return (rebuilt.view(np.int64) == np.broadcast_to(x, rebuilt.shape).view(np.int64)) & (k < 2.0 ** 52)


def _event_clock(x: np.ndarray):
    """x = float32(m * tick / 1e6): CUDA event milliseconds from a clock of `tick` ns. Returns (meta, [m], rebuilt x)
    or None."""
    with np.errstate(all="ignore"):
        ns = np.rint(x * 1e6)
        ns[~np.isfinite(ns) | (np.abs(ns) >= 2.0 ** 52)] = 0
    for tick in TICKS_NS:
        m = np.rint(ns / tick).astype(np.int64)
        meta = {"r": "g", "n": len(x), "k": tick}
        rebuilt = _rebuild_event(meta, m)
        if (rebuilt.view(np.int64) == x.view(np.int64)).mean() >= 0.875:
            return meta, [m], rebuilt
    return None


def _rebuild_event(meta: dict, m: np.ndarray) -> np.ndarray:
    return (m * float(meta["k"]) / 1e6).astype(np.float32).astype(np.float64)


def _int_meta(meta: dict, ints: list[np.ndarray]) -> list[tuple[int, int]]:
    """Each integer array's base (its smallest value) and byte width, noted in `meta` ("i")."""
    meta["i"] = [(int(i.min()) if len(i) else 0, _width(i)) for i in ints]
    return meta["i"]


def _width(ints: np.ndarray) -> int:
    if not len(ints):
        return 0
    span = int(ints.max()) - int(ints.min())
    return (span.bit_length() + 7) // 8


def _planes(ints: np.ndarray, base_width: tuple[int, int]) -> bytes:
    base, width = base_width
    return _planes_raw((ints - base).astype(np.uint64), width)


def _unplanes(data: bytes, n: int, base: int, width: int) -> np.ndarray:
    return _unplanes_raw(data, n, width).astype(np.int64) + base


def _planes_raw(values: np.ndarray, width: int) -> bytes:
    """The low `width` bytes of each uint64, byte plane by byte plane (all the lowest bytes, then the next...)."""
    if not width or not len(values):
        return b""
    return np.ascontiguousarray(values.astype("<u8").view(np.uint8).reshape(len(values), 8)[:, :width].T).tobytes()


def _unplanes_raw(data: bytes, n: int, width: int) -> np.ndarray:
    out = np.zeros((n, 8), dtype=np.uint8)
    if width and n:
        out[:, :width] = np.frombuffer(data, dtype=np.uint8, count=n * width).reshape(width, n).T
    return out.view("<u8").reshape(n)


# -- JSON values -----------------------------------------------------------------------------------------------------

# zlib's preset dictionary for a result's detail: the keys and the lab's own words that every detail repeats (the
# skeleton of runner.child.recording.detail and what the worker adds), so that each row does not spell them out again: a
# realistic detail packs in ~1.4 kB instead of ~2.6 kB. Part of JSON_FORMAT: a new dictionary is a new format.
DETAIL_WORDS = (
    '{"eager_second_call_s":0.0,"calls_per_round":{"latency":25,"throughput":100,"gpu":25},"speedup_p10":0.0,'
    '"speedup_p90":0.0,"work":{"flops":0,"min_bytes":0,"state_bytes":0.0,"io_bytes":0.0},"graph_break_reasons":[],'
    '"recompile_reasons":[],"recompile_limit_hits":[],"recompiles_while_measuring":[],"compile_phases_s":{"dynamo":0.0,'
    '"aot_autograd":0.0,"inductor":0.0,"inductor_codegen":0.0,"autotune":0.0},"compile_breakdown_s":{"dynamo tracing":'
    '0.0,"aot autograd":0.0,"inductor lowering":0.0,"codegen + kernel compile":0.0,"autotuning":0.0,'
    '"other (run, guards)":0.0},"first_call_parts":{"timed_in_child_s":0.0,"preloaded_imports_s":0.0},"cache_hits":'
    '{"inductor_fx_local_cache_hit_count":0,"inductor_fx_local_cache_miss_count":0},"cache_layers":{"fxgraph":{"hit":0,'
    '"miss":0,"bypass":0},"aotautograd":{"hit":0,"miss":0,"bypass":0},"triton":{"hit":0,"miss":0,"bypass":0}},'
    '"kernel_counts":{"unit":"kernels launched per call (torch.profiler, one steady-state call of each side)",'
    '"compiled_graph_calls":1,"estimated":false},"trace_overhead_s":0.0,"accuracy_note":"largest per-tensor relative '
    'error vs tolerance 0.0001 for float32","accuracy_check":{"compared":"","tensors":1,"failing":0,"reference":'
    '"float64","tolerance":0.0,"multiplier":0.0,"worst":{"tensor":"","rel_error":0.0,"max_abs_error":0.0,'
    '"within_tolerance":true}},"memory_method":"torch.cuda.max_memory_allocated above the allocation before the calls",'
    '"memory_method":"cpu peak RSS above RSS before the calls (VmHWM)","cudagraph_steps_marked":false,"cudagraphs":'
    '{"skipped":false,"skip_reasons":[],"skips":0,"rerecords_in_rounds":0,"pool_mb":0.0},"crosscheck":null,"env":'
    '{"python":"3.1","platform":"Linux-","cpu":"","cpu_count":0,"torch_threads":0,"cuda_visible_devices":"0",'
    '"tf32_matmul":false,"cudnn_benchmark":false,"autocast":null,"scope":"model"},"gpu_state":{"before_rounds":'
    '{"sm_clock_mhz":0,"temperature_c":0,"power_w":0.0},"after_rounds":{"sm_clock_mhz":0,"temperature_c":0,'
    '"power_w":0.0}},"host_state":{"before_rounds":{"loadavg":[0.0,0.0,0.0],"torch_threads":0,"cpus_allowed":0,'
    '"affinity":"0-","cpu_count":0},"after_rounds":{"loadavg":[0.0,0.0,0.0],"torch_threads":0,"cpus_allowed":0,'
    '"affinity":"0-","cpu_count":0},"worker_cpus":"0-","shares_cores_with":[],"busy_workers":[],"threads_pinned":0},'
    '"disturbance":{"rounds_s":0.0,"cores":0,"others_cpu_s":0.0,"others_share":0.0,"steal_s":0.0,"busiest_others":'
    '[{"pid":0,"name":"python","cpu_s":0.0},{"pid":0,"name":"pt_main_thread","cpu_s":0.0}],"cpu_s_by_kind":{"user":0.0,'
    '"nice":0.0,"system":0.0,"irq":0.0,"softirq":0.0,"steal":0.0},"own_cpu_s":0.0,"own_helpers":[{"pid":0,"name":'
    '"pt_main_thread","cpu_s":0.0}],"memory_stall_s":0.0,"pages_swapped_in":0,"sm_pct":0.0,"sm_clock_mhz_min":0,'
    '"sm_clock_mhz_max":0,"clock_event_reasons":[],"other_gpu_processes":[],"compile_workers":{}},"mega_cache":{"key":'
    '"","parts":{"model":"","batch_size":0,"model_args":{},"task":"inference","device":"cuda","dtype":"float32",'
    '"backend":"inductor","mode":"default","dynamic":null,"fullgraph":false,"cache":"cold","schedule":[],"iters":30,'
    '"timeout_s":1800,"torch_version":"2.","triton_version":"3."},"note":"this worker holds no cache signing key (work '
    '--cache-key-file; docs/operations.md): it keeps no bundle"},"measure_s":0.0,"work_cached":false,"tlparse_note":'
    'null,"follow_up_protocol":"the headline clock only","timeline":[{"phase":"claim","start":0.0,"seconds":0.0},'
    '{"phase":"job setup","start":0.0,"seconds":0.0},{"phase":"child start","start":0.0,"seconds":0.0},{"phase":'
    '"child setup","start":0.0,"seconds":0.0},{"phase":"compiler setup","start":0.0,"seconds":0.0},{"phase":'
    '"model build","start":0.0,"seconds":0.0},{"phase":"library warm-up","start":0.0,"seconds":0.0},{"phase":'
    '"eager first call","start":0.0,"seconds":0.0},{"phase":"accuracy","start":0.0,"seconds":0.0},{"phase":"memory",'
    '"start":0.0,"seconds":0.0},{"phase":"unaccounted","start":0.0,"seconds":0.0},{"phase":"compiled first call",'
    '"start":0.0,"seconds":0.0},{"phase":"trace capture","start":0.0,"seconds":0.0},{"phase":"warm-up","start":0.0,'
    '"seconds":0.0},{"phase":"rounds","start":0.0,"seconds":0.0},{"phase":"profiler","start":0.0,"seconds":0.0},'
    '{"phase":"FLOP count","start":0.0,"seconds":0.0},{"phase":"artifacts","start":0.0,"seconds":0.0},{"phase":'
    '"record","start":0.0,"seconds":0.0},{"phase":"result write","start":0.0,"seconds":0.0},{"phase":"job cleanup",'
    '"start":0.0,"seconds":0.0},{"phase":"read result","start":0.0,"seconds":0.0},{"phase":"cache bundle","start":0.0,'
    '"seconds":0.0},{"phase":"roofline placement","start":0.0,"seconds":0.0},{"phase":"store","start":0.0,'
    '"seconds":0.0}]}').encode()


def pack_json(value) -> bytes:
    """A JSON value (a result's detail) as compressed JSON text: floats as Python writes them, so exact."""
    packer = zlib.compressobj(LEVEL, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, DETAIL_WORDS)
    return bytes([JSON_FORMAT]) + packer.compress(json.dumps(value, separators=(",", ":")).encode()) + packer.flush()


def unpack_json(blob: bytes | memoryview | None, default=None):
    """pack_json's value back (empty bytes or None: `default`)."""
    if not blob:
        return default
    blob = bytes(blob)
    if blob[0] != JSON_FORMAT:
        raise PackError(f"packed JSON of format {blob[0]}, which this code does not read")
    try:
        unpacker = zlib.decompressobj(zdict=DETAIL_WORDS)
        return json.loads(unpacker.decompress(blob[1:]) + unpacker.flush())
    except (zlib.error, ValueError) as e:
        raise PackError(f"damaged packed JSON: {e}") from None
