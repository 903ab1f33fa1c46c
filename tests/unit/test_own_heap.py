"""runner.child.prewarm.own_heap: a forked child copies the pages it shares with its parent before its job, and
leaves the collector's generations as the parent left them (no collection)."""
import gc
import json
import os

import pytest

from runner.child import prewarm

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps_rollup"), reason="needs Linux's smaps_rollup")


def _private_kb() -> int:
    with open("/proc/self/smaps_rollup") as f:
        return sum(int(line.split()[1]) for line in f if line.startswith(("Private_Dirty", "Private_Clean")))


def _in_a_child(what) -> dict:
    """`what()` in a forked child; what it said (a dict, through a pipe)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(w, json.dumps(what()).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        said = json.loads(f.read())
    os.waitpid(pid, 0)
    return said


def _in_a_fork(touch: bool, pages: bool = True) -> dict:
    def what():
        if not pages:  # as on a kernel without MADV_POPULATE_WRITE
            prewarm._populate_private = lambda *_: None
        before, full = _private_kb(), gc.get_stats()[2]["collections"]
        heap = prewarm.own_heap() if touch else None
        return {"grew_kb": _private_kb() - before, "full": gc.get_stats()[2]["collections"] - full, "heap": heap}

    return _in_a_child(what)


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
@pytest.mark.parametrize("pages", [True, False], ids=["pages", "objects"])
def test_a_fork_makes_the_parents_objects_its_own_and_collects_nothing(pages):
    held = [{"n": i, "s": [i]} for i in range(300_000)]  # ~100 MB of tracked objects the parent holds
    gc.disable()  # no collection of its own may happen in the child between the two looks
    try:
        idle = _in_a_fork(touch=False)
        owned = _in_a_fork(touch=True, pages=pages)
    finally:
        gc.enable()
    assert owned["full"] == 0 and idle["full"] == 0
    # each of the held objects' pages was written once: copied into the child (tens of MB), the idle fork copied none
    assert owned["grew_kb"] > 20_000, owned
    assert idle["grew_kb"] < owned["grew_kb"] / 10, (idle, owned)
    assert owned["heap"]["how"] == ("pages" if pages else "objects") and owned["heap"]["s"] > 0
    if pages:  # every page the parent had filled: at least the held objects' ~100 MB
        assert owned["heap"]["mb"] >= 80 and owned["grew_kb"] > 80_000, owned
    del held


def test_smaps_not_as_the_kernel_writes_it_falls_back_to_the_objects(monkeypatch):
    import io

    garbled = "\n55d0-55d1 rw-p 00000000 00:00 0\nRss:   many kB\n"  # an empty line, then a size that is no number
    monkeypatch.setattr(prewarm, "open", lambda *a, **k: io.StringIO(garbled), raising=False)
    assert prewarm._populate_private() is None
    assert prewarm.own_heap()["how"] == "objects"


def _kb_of(field: str, mapping) -> int:
    """`field` (Rss, Private_Dirty, ...) summed over this process's mappings whose smaps header line `mapping` holds
    for, kB."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and ":" not in head[0]:
                inside = mapping(line.rstrip())
            elif inside and head[0] == f"{field}:":
                total += int(head[1])
    return total


def test_a_large_file_mapped_private_is_left_to_the_page_cache(tmp_path):
    import mmap

    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"\1" * (64 * 2 ** 20))  # a model's weights, mapped in as a loader maps them (private)
    with open(weights, "r+b") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    assert sum(mapped[i] for i in range(0, len(mapped), 4096)) == len(mapped) // 4096  # every page resident
    try:
        said = _in_a_child(lambda: {"heap": prewarm.own_heap(),
                                    "kb": _kb_of("Private_Dirty", lambda head: head.endswith(str(weights)))})
    finally:
        mapped.close()
    assert said["heap"]["how"] == "pages", said
    # not copied into the child: a fork does not copy the page tables of a file mapping the parent only read (the
    # child refaults its pages from the page cache), so none of it counts as resident there
    assert said["kb"] < 1024, said


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_beside_the_cuda_context_the_heap_is_still_made_its_own_and_the_contexts_mappings_are_left_alone():
    """own_heap_beside, as a child warmed ahead calls it around its CUDA context: `work` runs here and its answer
    comes back; the parent's objects are copied as own_heap copies them; and a mapping `work` makes (the driver's,
    on a GPU) is not written through, though most of it is resident: what to write was read before `work` began."""
    import ctypes
    import mmap

    held = [{"n": i, "s": [i]} for i in range(300_000)]  # ~100 MB of tracked objects the parent holds
    size = 32 * 2 ** 20

    def context() -> dict:  # a private mapping, 3/4 of it touched, as a driver's would be
        made = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        for i in range(0, size * 3 // 4, mmap.PAGESIZE):
            made[i] = 1
        context.kept = made
        return {"at": ctypes.addressof(ctypes.c_char.from_buffer(made))}

    def holds(address: int):
        def it(head: str) -> bool:
            lo, hi = (int(x, 16) for x in head.split()[0].split("-"))
            return lo <= address < hi
        return it

    def what():
        before = _private_kb()
        heap, done = prewarm.own_heap_beside(context)
        return {"heap": heap, "done": done, "grew_kb": _private_kb() - before, "rss_kb": _kb_of("Rss", holds(done["at"]))}

    gc.disable()
    try:
        said = _in_a_child(what)
    finally:
        gc.enable()
    del held
    assert said["heap"]["how"] == "pages" and said["heap"]["s"] > 0, said
    assert said["heap"]["mb"] >= 80 and said["grew_kb"] > 80_000, said  # the held objects' pages: copied
    # 3/4 of its 32 MB resident, as `context` left it: not written through (it would read 32,768 kB)
    assert 20_000 < said["rss_kb"] < 28_000, said
