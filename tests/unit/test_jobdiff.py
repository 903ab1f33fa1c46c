"""lab.jobdiff: two compiler stories side by side (a row differs where the text differs; a time only past 10%), the
generated code's diff without the cache paths that always differ, and text for a terminal with no escape acted on."""
from lab import jobdiff

A = {"torch_version": "2.13.0", "mode": "default", "graph_count": 1, "graph_breaks": 0, "graph_break_reasons": [],
     "recompiles": 0, "recompile_reasons": [], "compiled_first_call_s": 10.0,
     "compile_phases_s": {"dynamo": 10.0, "inductor": 8.0}, "cache_layers": {"fxgraph": {"hit": 0, "miss": 1}}}
B = {**A, "torch_version": "2.14.1", "graph_count": 2, "graph_breaks": 1,
     "graph_break_reasons": ["call to print()"], "compiled_first_call_s": 10.5,
     "compile_phases_s": {"dynamo": 10.5, "inductor": 5.0, "triton_compile": 1.0},
     "cache_layers": {"fxgraph": {"hit": 1, "miss": 0}}}


def test_the_rows_that_differ_are_marked_and_times_only_past_their_noise():
    rows = {r["what"]: r for r in jobdiff.story_rows(A, B)}
    differs = {w for w, r in rows.items() if r["differs"]}
    assert differs == {"torch", "graphs", "graph breaks", "break reasons", "compile phase: inductor (s)",
                       "compile phase: triton_compile (s)", "cache layer: fxgraph"}
    assert rows["break reasons"]["A"] == "(none)" and rows["break reasons"]["B"] == "call to print()"
    assert rows["compile phase: triton_compile (s)"]["A"] == "–"
    assert rows["cache layer: fxgraph"]["B"] == "hit 1, miss 0"
    text = jobdiff.lines_text(jobdiff.story_rows(A, B), only_differences=True)
    assert len([line for line in text.splitlines() if line.startswith("* ")]) == 7


def test_the_code_diff_leaves_out_cache_paths_and_says_when_there_is_no_code():
    a = "# ===== compile 0/0: /tmp/x/ab.py\nimport torch\nbuf = empty(8)\n"
    b = "# ===== compile 0/0: /tmp/y/cd.py\nimport torch\nbuf = empty(s0)\n"
    diff = jobdiff.code_diff(a, b, "job 1", "job 2")
    assert "-buf = empty(8)\n+buf = empty(s0)" in diff and "/tmp/" not in diff
    assert jobdiff.code_diff(a, a.replace("/tmp/x/ab.py", "/tmp/z/ef.py")) == ""  # only the path differs: the same
    assert jobdiff.code_diff(None, b, "job 1", "job 2") == "(no output code kept for job 1: nothing to diff)\n"


def test_text_for_a_terminal_shows_escapes_instead_of_acting_on_them():
    assert jobdiff.printable("a\x1b[2Jb\tc\nd\x07") == "a\\x1b[2Jb\tc\nd\\x07"


def test_the_terminal_lines_read_name_a_to_b_one_reason_a_line_and_no_raw_dicts():
    a = {**A, "recompile_reasons": [{"compile_id": "0/1", "reason": "tensor 'x' size mismatch at index 0. expected 8, "
                                     "actual 16", "function": "forward", "file": "m.py", "line": 12, "source": "y = x"}]}
    b = {**B, "graph_break_reasons": [{"reason": "call to print()", "file": "m.py", "line": 7, "source": "print(x)"},
                                      {"reason": "data-dependent branch", "count": 2}]}
    rows = jobdiff.story_rows(a, b)
    out = jobdiff.lines_text(rows, only_differences=True)
    assert "{" not in out and "'reason'" not in out
    lines = out.splitlines()
    assert "* torch: 2.13.0 -> 2.14.1" in lines and "* graphs: 1 -> 2" in lines
    assert "* cache layer: fxgraph: hit 0, miss 1 -> hit 1, miss 0" in lines
    at = lines.index("* break reasons:")
    assert lines[at + 1:at + 4] == ["    A: (none)", "    B: call to print() (m.py:7: print(x))",
                                    "    B: data-dependent branch (2 times)"]
    at = lines.index("* guards that failed (recompile reasons):")
    assert lines[at + 1:at + 3] == ["    A: [0/1] tensor 'x' size mismatch at index 0. expected 8, actual 16 "
                                    "(forward, m.py:12: y = x)", "    B: (none)"]
    every = jobdiff.lines_text(rows).splitlines()
    assert "  mode: default" in every and len([x for x in every if x.startswith("* ")]) == sum(r["differs"] for r in rows)
    assert not any(r["A"].startswith("{") or "{'" in r["B"] for r in rows)  # Compare's table reads the same way


def test_a_process_repeat_reads_as_compiled_from_a_warm_cache_not_its_specs_cold_one():
    """A cold-cache configuration's process repeat compiles from its first run's kept cache: the row says what each
    first call compiled from (lab.first_call.kind), as the job page and the answer count it."""
    first = {**A, "cache": "cold", "first_call_cache": "cold", "graph_cache_hit": False}
    repeat = {**A, "cache": "cold", "first_call_cache": "warm", "graph_cache_hit": True}
    rows = {r["what"]: r for r in jobdiff.story_rows(first, repeat)}
    assert (rows["first call compiled from"]["A"], rows["first call compiled from"]["B"]) == ("cold", "warm")
    assert rows["first call compiled from"]["differs"] and "compile cache" not in rows
