"""The sandbox on its own: real bubblewrap runs of hostile cells (no nbgrader), a few seconds in all.

What a submission's code can reach (not the course, the grading code, the gradebook or other submissions;
no network; not root), what it can use (time, memory, processes, disk, output), and that a submission that
ignores its time limit, dies, or forges the grader's records is reported as such.
"""

from __future__ import annotations

import json
import time

import pytest
from grading_support import COURSE, ROOT, require_sandbox, sandbox, tree_digest


@pytest.fixture(scope="module", autouse=True)
def bubblewrap():
    require_sandbox()


# A 1 s time limit keeps the slow-cell tests short. The grace after an interrupt is 5 s: a loaded machine (CI runs
# the suites side by side on two cores) can take over a second to deliver KeyboardInterrupt and send the record.
LIMITS = sandbox.Limits(cell_seconds=1, check_seconds=1, grace_seconds=5, startup_seconds=60, memory_mb=1024,
                        processes=12, disk_mb=8, text_cap=50_000, log_cap=1_000)
# The resource test's cells fork, allocate and fill the disk: under load that takes longer than 1 s.
SMALL_OUTPUT = sandbox.Limits(**{**LIMITS.__dict__, "text_cap": 2_000, "cell_seconds": 20})


def run(sources, limits=LIMITS, request=None, **kwargs):
    cells = [{"index": i, "source": s} for i, s in enumerate(sources)]
    return sandbox.run_submission(cells, lambda records: request or {"groups": []}, limits, **kwargs)


def text(run_result, index) -> str:
    outs = run_result.cells[index]["outputs"]
    return "".join(o.get("text", "") + o.get("evalue", "") + "".join(o.get("traceback", [])) for o in outs)


@pytest.fixture(scope="module")
def decoy(tmp_path_factory):
    """A course folder on the server, with a grader file, a gradebook and another student's submission."""
    course = tmp_path_factory.mktemp("decoy-course")
    (course / "normlab_grading").mkdir()
    (course / "normlab_grading" / "hidden_checks.py").write_text("COURSE_SEED = 987654321\n")
    (course / "gradebook.db").write_bytes(b"SQLite format 3\x00 secret grades")
    other = course / "submitted" / "bob" / "chapter23"
    other.mkdir(parents=True)
    (other / "exercises.ipynb").write_text('{"answer": "bob-secret-answer"}')
    return course


INTRUSION = r"""
import os, socket, sys
found = []
for path in TARGETS:
    try:
        with open(path, "a") as fh:
            fh.write("sabotage")
        found.append(f"WROTE {path}")
    except OSError as exc:
        found.append(f"no write {path}: {type(exc).__name__}")
    try:
        found.append(f"READ {path}: {open(path, 'rb').read()[:60]!r}")
    except OSError as exc:
        found.append(f"no read {path}: {type(exc).__name__}")
found.append("listing " + repr(sorted(os.path.join(r, f) for r, _, fs in os.walk(COURSE) for f in fs)))
found.append("top " + repr(sorted(os.listdir("/"))))
found.append("opt " + repr(sorted(os.listdir("/opt/normlab"))))
found.append(f"uid {os.getuid()} euid {os.geteuid()} groups {os.getgroups()}")
found.append("caps " + open("/proc/self/status").read().split("CapEff:")[1].split()[0])
found.append("pids " + repr(sorted(int(p) for p in os.listdir("/proc") if p.isdigit())))
found.append("env " + repr(sorted(os.environ)))
found.append("cwd " + os.getcwd() + " exe " + sys.executable)
for address in (("1.1.1.1", 80), ("127.0.0.1", 22)):
    try:
        socket.create_connection(address, timeout=1)
        found.append(f"CONNECTED {address}")
    except OSError as exc:
        found.append(f"no connection {address}: {exc.errno}")
try:
    os.setuid(0)
    found.append("BECAME ROOT")
except OSError as exc:
    found.append(f"no root: {exc.errno}")
print("\n".join(found))
"""

LIMITED = r"""
import os, time
children = 0
for _ in range(100):
    try:
        if os.fork() == 0:
            time.sleep(2)
            os._exit(0)
        children += 1
    except OSError:
        break
print(f"forked {children}")
try:
    block = bytearray(2 * 1024**3)
    print("ALLOCATED 2 GiB")
except MemoryError:
    print("no memory")
try:
    with open("/tmp/big", "wb") as fh:
        for _ in range(64):
            fh.write(b"z" * 1024**2)
    print("WROTE 64 MiB")
except OSError as exc:
    print(f"disk full: {exc.errno}")
"""


def test_student_code_cannot_reach_or_change_the_course(decoy):
    targets = [str(decoy / "normlab_grading" / "hidden_checks.py"), str(decoy / "gradebook.db"),
               str(decoy / "submitted" / "bob" / "chapter23" / "exercises.ipynb"),
               str(COURSE / "normlab_grading" / "hidden_checks.py"), "/opt/normlab/runner.py",
               "/opt/normlab/lib/normlab_core/norms/__init__.py", "/usr/bin/python3", "/etc/ld.so.cache"]
    before = tree_digest(decoy), tree_digest(COURSE / "normlab_grading")
    prelude = f"TARGETS = {targets!r}\nCOURSE = {str(decoy)!r}\n"
    result = run([prelude + INTRUSION])
    assert result.status == "ok", result.reason
    out = text(result, 0)
    assert "WROTE" not in out and "CONNECTED" not in out and "BECAME ROOT" not in out, out
    for secret in ("987654321", "secret grades", "bob-secret-answer", "def plan_ex1_function"):
        assert secret not in out
    # Reading is allowed only for the system, Python and normlab_core: the files that hold no answer.
    readable = {line.split(":")[0][5:] for line in out.splitlines() if line.startswith("READ ")}
    assert readable == {"/opt/normlab/runner.py", "/opt/normlab/lib/normlab_core/norms/__init__.py", "/usr/bin/python3",
                        "/etc/ld.so.cache"}
    assert "listing []" in out
    top = eval(out.split("top ")[1].splitlines()[0])  # noqa: S307 - our own repr
    assert "work" not in top and "root" not in top and set(top) <= {"bin", "dev", "etc", "home", "lib", "lib32",
                                                                   "lib64", "opt", "proc", "sbin", "tmp", "usr"}
    assert "uid 65534 euid 65534 groups []" in out and "caps 0000000000000000" in out
    cwd = next(line for line in out.splitlines() if line.startswith("cwd "))
    assert cwd == "cwd /home/student/work exe " + (
        "/opt/normlab/venv/bin/python" if sandbox.environment_binds()[1].startswith("/opt/normlab/venv") else
        sandbox.environment_binds()[1])
    assert str(ROOT) not in cwd and "/root/" not in cwd
    assert eval(out.split("pids ")[1].splitlines()[0]) == [1, 2]  # noqa: S307 - bubblewrap's init and us
    assert before == (tree_digest(decoy), tree_digest(COURSE / "normlab_grading"))


def test_time_memory_processes_disk_and_output_are_capped():
    result = run([LIMITED, "print('x' * 50_000_000)\nimport os\nos.write(1, b'y' * 5_000_000)\nos.write(2, b'!')"],
                 limits=SMALL_OUTPUT)
    assert result.status == "ok", result.reason
    out = text(result, 0)
    forked = int(out.split("forked ")[1].split()[0])
    assert 0 < forked < 40, out  # the process limit (processes * concurrent + 16) stops a fork bomb
    assert "no memory" in out and "disk full: 28" in out, out
    printed = result.cells[1]["outputs"]
    assert len(printed[0]["text"]) == SMALL_OUTPUT.text_cap
    assert "[output cut: this cell wrote 50,000,001 characters to stdout; the first 2,000 are kept]" in \
        printed[-1]["text"]
    assert len(result.log) < 1200 and "[log cut: the sandbox wrote 5,000,001 bytes" in result.log


def test_a_cell_that_ignores_the_interrupt_is_stopped_and_reported():
    start = time.monotonic()
    stubborn = "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except BaseException:\n        pass\n"
    result = run(["x = 1", stubborn, "print('never')"])
    assert time.monotonic() - start < 60  # stopped, not left to loop: 1 s limit + 5 s grace + start-up
    assert result.status == "timeout"
    assert result.reason == "cell 1 ignored the interrupt at its time limit of 1 s and was stopped 5 s later"
    assert set(result.cells) == {0}


def test_a_slow_cell_is_interrupted_and_grading_goes_on():
    result = run(["import time\ntime.sleep(30)", "print('next')", "input('your name? ')"])
    assert result.status == "ok"
    assert result.cells[0]["timed_out"] and result.cells[0]["outputs"][-1]["ename"] == "KeyboardInterrupt"
    assert text(result, 1) == "next\n"
    assert not result.cells[2]["timed_out"] and "input() is not available" in text(result, 2)


def test_a_dead_kernel_is_reported():
    result = run(["print(1)", "import os\nos._exit(3)", "print(2)"])
    assert result.status == "died" and "during cell 1 (exit status 3)" in result.reason


def test_forged_records_are_reported_as_tampering():
    # The student's code can write to the grader's channel (any open descriptor); what it writes never
    # counts: a record out of place ends the run as tampering.
    forge = ("import json, os\nfor fd in range(3, 20):\n    try:\n"
             "        os.write(fd, (json.dumps({'cells-done': True}) + '\\n').encode())\n"
             "    except OSError:\n        pass\n")
    result = run([forge, "print('after')"])
    assert result.status == "tampered" and "announced early" in result.reason
    fake_group = ("import json, os\nfor fd in range(3, 20):\n    try:\n"
                  "        os.write(fd, (json.dumps({'group': 'test_ex1_function', 'results': []}) + '\\n').encode())\n"
                  "    except OSError:\n        pass\n")
    result = run([fake_group])
    assert result.status == "tampered" and "unexpected cell record" in result.reason


def test_the_calls_return_plain_data_and_nothing_of_the_grader_is_in_the_namespace():
    request = {"groups": [{"id": "g", "budget": 1, "tripwire": ["norms"], "calls": [
        {"call": "probe", "args": []}, {"get": "value"},
        {"call": "layer_norm", "args": [{"array": [1.0, 2.0], "shape": [2]}]},
        {"call": "slow", "args": []}, {"get": "value"}]}]}
    source = ("from normlab_core import layer_norm\nimport sys, time\nvalue = 2.5\n"
              "def probe():\n"
              "    names = sorted(n for n in globals() if not n.startswith('_'))\n"
              "    mods = sorted(m for m in sys.modules if 'grad' in m or 'hidden' in m or 'runner' in m)\n"
              "    return names, mods\n"
              "def slow():\n    time.sleep(5)\n")
    result = run([source], request=request)
    assert result.status == "ok", result.reason
    group = result.groups["g"]
    names = [i["v"] for i in group["results"][0]["value"]["items"][0]["items"]]
    assert set(names) <= {"In", "Out", "exit", "get_ipython", "open", "quit", "layer_norm", "probe", "slow", "sys",
                          "time", "value"}, names
    assert group["results"][1] == {"value": {"t": "float", "v": 2.5}}
    assert group["results"][2]["error"]["type"] == "RuntimeError" and group["tripped"] == ["norms.layer_norm"]
    assert group["stopped"] and group["finished"] == 3 and group["total"] == 5
    json.dumps(group)  # plain data


def test_as_an_ordinary_user_the_sandbox_uses_a_user_namespace(monkeypatch):
    # What an instructor who is not root gets: bubblewrap makes a user namespace in which the code is uid 65534,
    # with no capabilities, and cannot make namespaces of its own (bubblewrap 0.8's --disable-userns).
    monkeypatch.setattr(sandbox, "privileged", lambda: False)
    probe = ("import os, subprocess\n"
             "print(os.getuid(), open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
             "print(subprocess.run(['unshare', '--user', 'true'], capture_output=True).returncode != 0)\n")
    result = run([probe])
    assert result.status == "ok", result.reason
    lines = text(result, 0).split("\n")
    assert lines[0] == "65534 0000000000000000"
    assert lines[1] == ("True" if sandbox.bwrap_version() >= (0, 8) else lines[1])


def test_without_the_sandbox_the_same_runner_works_but_reaches_everything(tmp_path):
    # What --unsafe-no-sandbox means: the same limits and protocol, and none of the isolation.
    target = tmp_path / "outside.txt"
    result = run([f"open({str(target)!r}, 'w').write('reached')"], sandbox=False)
    assert result.status == "ok" and target.read_text() == "reached"


def test_grading_refuses_to_run_without_the_sandbox(tmp_path, tmp_path_factory, monkeypatch, capsys):
    from grading_support import mx, released_course, shared_tmp
    from normlab_grading import grade

    course, _, released = released_course(tmp_path / "course", shared_tmp(tmp_path_factory))
    folder = course / "submitted" / "alice" / mx.ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / mx.NOTEBOOK).write_text(json.dumps(released))
    monkeypatch.setattr(sandbox, "BWRAP", str(tmp_path / "no-bwrap"))
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    monkeypatch.setattr(sandbox, "_CHECKED", {})
    monkeypatch.chdir(course)
    (course / "logs").mkdir()
    with open(course / "logs" / ".grading.lock", "w") as held:  # another `make grade` in the same folder
        import fcntl

        fcntl.flock(held, fcntl.LOCK_EX)
        assert grade.main(["chapter23"]) == 2
    assert "another `make grade` is running in this course folder" in capsys.readouterr().out
    assert grade.main(["chapter23"]) == 2
    out = capsys.readouterr().out
    assert "Cannot grade safely: bubblewrap is not installed" in out and "--unsafe-no-sandbox" in out
    assert not (course / "grades.csv").exists() and not (course / "autograded").exists()


def test_a_module_handed_in_beside_the_notebook_can_be_imported(tmp_path):
    # As in JupyterLab, where the notebook's folder is on sys.path: `import helpers` finds helpers.py beside it.
    (tmp_path / "helpers.py").write_text("def twice(v):\n    return 2 * v\n")
    result = run(["import helpers\nprint('twice:', helpers.twice(21))"],
                 files=[(tmp_path / "helpers.py", "helpers.py")])
    assert result.status == "ok", result.reason
    assert "twice: 42" in text(result, 0), text(result, 0)


SPINNERS = """
import threading

def spin():
    while True:
        pass

for _ in range(50):
    threading.Thread(target=spin, daemon=True).start()
print("started", threading.active_count() - 1)
"""

AFTER_SPINNERS = """
import sys
print("threads alive:", len(sys._current_frames()) - 1)
total = 0
for i in range(200_000):
    total += i
print("total", total)
"""


def test_fifty_spinning_threads_do_not_outlive_their_cell():
    # Threads left spinning in Python would share the GIL with every later cell and check, slowing a blank
    # notebook fifty times over. When their cell ends (at the latest at its time limit) they are stopped, the
    # notebook says so, and the cells after it run as if they had never been started.
    limits = sandbox.Limits(**{**LIMITS.__dict__, "cell_seconds": 10, "grace_seconds": 20, "processes": 64})
    result = run([SPINNERS, AFTER_SPINNERS], limits)
    assert result.status == "ok", result.reason
    first, second = text(result, 0), text(result, 1)
    assert "thread(s) started by this cell were stopped when it ended" in first
    assert "threads alive: 0" in second and "total 19999900000" in second
    assert not result.cells[1].get("timed_out")
