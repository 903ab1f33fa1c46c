"""lab.cpu_quota: a cgroup's CPU quota (cgroup v2's cpu.max, v1's cfs quota) caps the CPUs a worker's threads and the
pages' small-host rule count, read from files laid out as the kernel lays them out."""
from lab import cpu_quota


def tree(tmp_path, proc_line: str, files: dict) -> tuple:
    root = tmp_path / "cgroup"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    root.mkdir(exist_ok=True)
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text(proc_line)
    return root, proc


def test_a_v2_quota_on_the_group_or_an_ancestor_caps_the_cpus(tmp_path):
    root, proc = tree(tmp_path, "0::/kubepods/pod1/ctr\n", {"kubepods/pod1/ctr/cpu.max": "max 100000\n",
                                                             "kubepods/pod1/cpu.max": "250000 100000\n",
                                                             "cpu.max": "max 100000\n"})
    assert cpu_quota.quota(root, proc) == 2.5  # the pod's limit, set on the container's parent
    assert cpu_quota.usable(64, 2.5) == 2 and cpu_quota.usable(1, 2.5) == 1 and cpu_quota.usable(8, 0.5) == 1


def test_a_v1_quota_and_none_at_all(tmp_path):
    root, proc = tree(tmp_path, "4:memory:/x\n1:cpu:/\n0::/\n", {"cpu/cpu.cfs_quota_us": "400000\n",
                                                                  "cpu/cpu.cfs_period_us": "100000\n"})
    assert cpu_quota.quota(root, proc) == 4.0
    root, proc = tree(tmp_path / "none", "0::/\n", {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n",
                                                     "cpu.max": "max 100000\n"})
    assert cpu_quota.quota(root, proc) is None and cpu_quota.usable(16, None) == 16
    assert cpu_quota.quota(tmp_path / "missing", tmp_path / "missing-proc") is None  # not Linux: nothing read
