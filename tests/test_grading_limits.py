"""The sandbox as a whole: its own cgroup (memory, processes) and a seccomp filter, tried with hostile cells.

Each sandbox gets a cgroup of its own, so a fork bomb in one does not take the threads of another running
beside it, and memory counts every process and memfd together. Namespaces and mounts are refused by the
filter. After every run no cgroup of this process is left behind.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from grading_support import require_sandbox, sandbox
from normlab_grading import limits as sandbox_limits

LIMITS = sandbox.Limits(cell_seconds=300, check_seconds=10, grace_seconds=10, startup_seconds=120, memory_mb=512,
                        processes=12, disk_mb=8, text_cap=20_000, log_cap=4_000)


def _unavailable(reason: str) -> None:
    if os.environ.get("NORMLAB_REQUIRE_SANDBOX") == "1":
        pytest.fail(f"the grading sandbox's cgroups are required here (NORMLAB_REQUIRE_SANDBOX=1): {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def cgroups():
    """Skip (or fail under NORMLAB_REQUIRE_SANDBOX=1) unless bubblewrap works and a cgroup can be made."""
    require_sandbox()
    if os.geteuid() != 0 and not os.environ.get("NORMLAB_CGROUP"):
        _unavailable("cgroups per sandbox need root here (or a delegated cgroup named by NORMLAB_CGROUP)")
    group, why = sandbox_limits.open_cgroup(64 << 20, 16, 1.0)
    if group is None:
        _unavailable(f"no cgroup can be made on this machine: {why}")
    group.remove()


@pytest.fixture(autouse=True)
def nothing_left_behind():
    yield
    assert sandbox_limits.leftovers() == []


def run(source, limits=LIMITS, **kwargs):
    return sandbox.run_submission([{"index": 0, "source": source}], lambda records: {"groups": []}, limits,
                                  **kwargs)


def text(result) -> str:
    return "".join(o.get("text", "") + o.get("evalue", "") for o in result.cells[0]["outputs"])


BOMB = r"""
import os, threading, time
threading.stack_size(256 * 1024)
hold = threading.Event()
threads = children = 0
while True:
    try:
        threading.Thread(target=hold.wait, daemon=True).start()
        threads += 1
    except RuntimeError:
        break
while True:
    try:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        children += 1
    except OSError:
        break
print(f"bomb: {threads} threads, {children} processes")
for _ in range(3000):  # until the test says stop (in the file bound read-only beside the notebook)
    if open("release.txt").read() == "stop":
        break
    time.sleep(0.1)
"""

POOL = r"""
import concurrent.futures, threading
barrier = threading.Barrier(8, timeout=120)  # passes only once 8 threads are running at the same time
with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
    idents = set(pool.map(lambda _: (barrier.wait(), threading.get_ident())[1], range(8)))
print(f"pool: {len(idents)} threads together")
"""


def _pids_refused() -> int:
    """Forks refused so far in the cgroups of this process's sandboxes."""
    total = 0
    for folder in sandbox_limits.leftovers():
        events = folder / "pids.events"
        if events.exists():
            total += int(dict(line.split() for line in events.read_text().splitlines()).get("max", 0))
    return total


def test_a_fork_and_thread_bomb_does_not_starve_a_sandbox_beside_it(cgroups, tmp_path):
    release = tmp_path / "release.txt"
    release.write_text("hold")
    bomb: dict = {}
    worker = threading.Thread(target=lambda: bomb.update(run=run(BOMB, files=[(release, "release.txt")])))
    worker.start()
    try:
        for _ in range(1200):  # the bomb's sandbox is at its limit (or has ended, which the asserts below show)
            if _pids_refused() or not worker.is_alive():
                break
            time.sleep(0.1)
        assert worker.is_alive() and _pids_refused() > 0, "the bomb did not reach its sandbox's process limit"
        pool = run(POOL)
        assert worker.is_alive()  # the bomb held its threads and processes all along
    finally:
        release.write_text("stop")
        worker.join()
    assert pool.status == "ok", pool.reason
    assert "pool: 8 threads together" in text(pool), text(pool)
    assert pool.hits == []
    result = bomb["run"]
    assert result.status == "ok", result.reason
    threads, children = (int(n) for n in text(result).split("bomb: ")[1].replace(" threads,", "").split()[:2])
    tasks = sandbox.cgroup_tasks(LIMITS)
    assert 0 < threads + children < tasks  # bubblewrap's two processes and the runner count too
    assert result.hits == [f"the sandbox reached its limit of {tasks} processes and threads "
                           f"({result.hits[0].split('(')[1].split()[0]} refused)"]
    assert result.confinement.startswith("cgroup v")


CHILDREN = r"""
import os, signal, time
MB = 1 << 20
held = [os.memfd_create("held") for _ in range(6)]  # RLIMIT_FSIZE caps each file, not their number
for fd in held:
    for _ in range(25):
        os.write(fd, b"m" * MB)  # 150 MB of memfd pages in all: no process's address space holds them
ready_r, ready_w = os.pipe()   # a child that holds its memory says so here ...
go_r, go_w = os.pipe()         # ... and holds it until this pipe closes
pids = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        held = b"c" * (200 * MB)  # each child stays well below the per-process cap of 512 MB
        os.close(go_w)
        os.write(ready_w, bytes([i]))
        os.read(go_r, 1)   # returns when the parent closes its end, the last one open
        os._exit(0)
    pids.append(pid)
os.close(ready_w)
os.set_blocking(ready_r, False)
ready, dead, t0 = set(), {}, time.monotonic()
while len(ready | set(dead)) < 3 and time.monotonic() - t0 < 60:   # until no child is still taking memory
    try:
        ready.update(os.read(ready_r, 3))
    except BlockingIOError:
        pass
    for i, pid in enumerate(pids):
        if i not in dead and (done := os.waitpid(pid, os.WNOHANG))[0] == pid:
            dead[i] = done[1]
    time.sleep(0.05)
os.close(go_w)   # the children that still hold their memory let it go
statuses = [dead[i] if i in dead else os.waitpid(pid, 0)[1] for i, pid in enumerate(pids)]
killed = sum(os.WIFSIGNALED(s) and os.WTERMSIG(s) == signal.SIGKILL for s in statuses)
print(f"children killed: {killed}, exited: {sum(os.WIFEXITED(s) for s in statuses)}")
"""


def test_processes_and_memfd_share_one_memory_limit(cgroups):
    # 150 MB of memfd and three children of 200 MB: 750 MB together, above the sandbox's 512 MB.
    result = run(CHILDREN)
    assert result.status == "ok", result.reason
    out = text(result)
    killed = int(out.split("children killed: ")[1].split(",")[0])
    assert killed >= 1, out  # the sum is over the limit, so not all three can hold their memory
    assert killed + int(out.split("exited: ")[1].split()[0]) == 3
    assert len(result.hits) == 1 and result.hits[0].startswith("the sandbox reached its memory limit of 512 MB")
    # The grader goes on: the next sandbox starts afresh.
    assert run("print(2 + 2)").status == "ok"


def test_memory_in_a_memfd_alone_is_counted(cgroups):
    # No process holds these pages in its address space, so only the cgroup can stop them.
    result = run("import os\nfds = [os.memfd_create('x') for _ in range(28)]\nfor fd in fds:\n"
                 "    for _ in range(25):\n        os.write(fd, b'm' * (1 << 20))\nprint('WROTE 700 MB')")
    assert result.status == "died", result.reason
    # bubblewrap reports the runner's SIGKILL as exit status 128 + 9
    assert result.reason.endswith("(exit status 137): the sandbox reached its memory limit of 512 MB "
                                  "(1 process(es) killed)"), result.reason


NAMESPACES = r"""
import ctypes, errno, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)


def outcome(rc):
    return "ok" if rc >= 0 else errno.errorcode[ctypes.get_errno()]


CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, SIGCHLD = 0x00020000, 0x10000000, 0x40000000, 17
print("unshare user", outcome(libc.unshare(CLONE_NEWUSER)))
print("unshare user+mount", outcome(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS)))
print("unshare net", outcome(libc.unshare(CLONE_NEWNET)))
print("mount tmpfs", outcome(libc.mount(b"none", b"/tmp", b"tmpfs", 0, b"size=1g")))
print("setns", outcome(libc.setns(os.open("/proc/self/ns/net", os.O_RDONLY), 0)))
rc = libc.syscall(56, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0)  # clone(2) on x86-64
if rc == 0:
    os._exit(0)
print("clone mount", outcome(rc))
print("clone3", outcome(libc.syscall(435, 0, 0)))
print("unshare(1)", subprocess.run(["unshare", "--user", "--map-root-user", "true"]).returncode != 0)
worker = threading.Thread(target=print, args=("a thread runs",))
worker.start()
worker.join()
pid = os.fork()
if pid == 0:
    os._exit(7)
print("a child exits with", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


@pytest.mark.parametrize("as_root", [True, False], ids=["root", "ordinary-user"])
def test_namespaces_and_mounts_are_refused(monkeypatch, as_root):
    require_sandbox()
    if as_root and not sandbox.privileged():
        pytest.skip("the sandbox as root needs root")
    monkeypatch.setattr(sandbox, "privileged", lambda: as_root)
    program, why = sandbox_limits.seccomp_filter()
    if program is None:
        _unavailable(f"no seccomp filter here: {why}")
    result = run(NAMESPACES)
    assert result.status == "ok", result.reason
    assert result.confinement.endswith("seccomp filter on")
    lines = text(result).splitlines()
    assert lines == ["unshare user EPERM", "unshare user+mount EPERM", "unshare net EPERM", "mount tmpfs EPERM",
                     "setns EPERM", "clone mount EPERM", "clone3 ENOSYS", "unshare(1) True", "a thread runs",
                     "a child exits with 7"], lines


def test_without_libseccomp_the_sandbox_runs_and_says_the_filter_is_off(monkeypatch):
    require_sandbox()
    monkeypatch.setattr(sandbox_limits.ctypes.util, "find_library", lambda name: "libseccomp-missing.so.0")
    sandbox_limits.seccomp_filter.cache_clear()
    try:
        result = run("print('still graded')")
    finally:
        sandbox_limits.seccomp_filter.cache_clear()   # the next sandbox builds the real filter again
    assert result.status == "ok", result.reason
    assert "still graded" in text(result)
    assert "seccomp filter off: libseccomp could not build the filter" in result.confinement
    assert "seccomp filter off" in sandbox.confinement_note(LIMITS)


def test_without_a_cgroup_the_per_process_limits_hold_and_the_run_says_so(monkeypatch, tmp_path):
    require_sandbox()
    (tmp_path / "mounts").write_text("proc /proc proc rw 0 0\n")   # as on a machine with no cgroup to use
    monkeypatch.setattr(sandbox_limits, "PROC_MOUNTS", tmp_path / "mounts")
    fork = ("import os, time\nn = 0\nfor _ in range(100):\n    try:\n        if os.fork() == 0:\n"
            "            time.sleep(2)\n            os._exit(0)\n        n += 1\n    except OSError:\n        break\n"
            "print('forked', n)")
    result = run(fork)
    assert result.status == "ok", result.reason
    assert result.confinement.startswith("per-process limits only (no cgroup: cgroup v2: no cgroup2 file system")
    assert 0 < int(text(result).split("forked ")[1]) < 100  # RLIMIT_NPROC still stops a fork bomb
    assert result.hits == []
    assert "WARNING: per-process limits only" in sandbox.confinement_note(LIMITS)


def test_a_cgroup_v2_folder_gets_the_limits_and_reports_what_was_hit(monkeypatch, tmp_path):
    # This machine may have no cgroup v2 with memory and pids; the files the grader writes and reads are the
    # same in a folder laid out like one (the kernel's own behaviour is what the tests above try).
    root = tmp_path / "unified"
    (root / "grading.slice").mkdir(parents=True)
    (root / "grading.slice" / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (root / "grading.slice" / "cgroup.subtree_control").write_text("")
    (tmp_path / "mounts").write_text(f"proc /proc proc rw 0 0\ncgroup2 {root} cgroup2 rw,nosuid 0 0\n")
    (tmp_path / "cgroup").write_text("0::/grading.slice\n")
    monkeypatch.setattr(sandbox_limits, "PROC_MOUNTS", tmp_path / "mounts")
    monkeypatch.setattr(sandbox_limits, "PROC_CGROUP", tmp_path / "cgroup")
    group, why = sandbox_limits.open_cgroup(300 << 20, 20, 1.5)
    assert group is not None and why == "", why
    folder = group.folders["all"]
    assert folder.parent == root / "grading.slice" and folder.name.startswith(f"normlab-{os.getpid()}-")
    assert (root / "grading.slice" / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    assert (folder / "memory.max").read_text() == str(300 << 20)
    assert (folder / "pids.max").read_text() == "20" and (folder / "cpu.max").read_text() == "150000 100000"
    assert group.procs_files() == [str(folder / "cgroup.procs")]
    (folder / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\n")
    (folder / "pids.events").write_text("max 5\n")
    assert group.hits() == {"memory": 2, "processes": 5}
    (root / "grading.slice" / "cgroup.controllers").write_text("cpu io\n")
    group, why = sandbox_limits.open_cgroup(300 << 20, 20, 1.0)   # and no cgroup v1 to fall back on
    assert group is None and "offers cpu io, not memory pids" in why and "cgroup v1" in why, why
