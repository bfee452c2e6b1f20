"""Run one submission in a bubblewrap sandbox and collect what it sends back, as plain data.

The sandbox (`bwrap`, Debian's package `bubblewrap`) gives the student's code a file system of its own:

- read-only: the system (`/usr` and the links to it), the Python installation, the virtual environment
  (mounted at /opt/normlab/venv), the graded copy of `normlab_core` (`graded_core`: what the setup cells use,
  no reference implementation; at /opt/normlab/lib) and `runner.py` and `wire.py`, the grading files that
  run inside, which hold no answer;
- writable and thrown away afterwards: an empty home folder and /tmp, each a small in-memory file system;
- nothing else: not the course folder, its source notebooks, `normlab_grading/` (references and seeds), the
  gradebook, `submitted/` or `autograded/` (other students' work), nor the rest of the server.

It has no network (a network namespace of its own, with only a loopback device), its own process and IPC
namespaces and host name, and runs as an unprivileged user id (65534, "nobody") with no capabilities; a
seccomp filter (`limits.py`) refuses new namespaces and mounts. Limits: time per cell and per check (a SIGALRM
interrupt first, then the grader kills the whole sandbox if that is ignored), memory (of the whole sandbox,
in a cgroup of its own where the machine allows one, and the address space of each process), CPU time,
processes and threads (per sandbox with a cgroup, else per user id), open files, file sizes and the size of
the writable folders, and the output it may send back (text cut at a cap, with a note).

Nothing here judges answers: `grade.py` does that with the records this module returns.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from normlab_grading import graded_core, wire
from normlab_grading import limits as sandbox_limits

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "runner.py"
# The grading files the runner imports, bound beside normlab_core as a package of their own (no other file of
# normlab_grading is there: the references, plans and seed stay outside).
INSIDE_GRADING = ("__init__.py", "wire.py")
BWRAP = "/usr/bin/bwrap"
INSIDE_VENV = "/opt/normlab/venv"
INSIDE_LIB = "/opt/normlab/lib"
INSIDE_RUNNER = "/opt/normlab/runner.py"
HOME = "/home/student"
UNPRIVILEGED = 65534  # "nobody"


@dataclasses.dataclass
class Limits:
    """What one submission may use. The course can change these in nbgrader_config.py (`c.NormlabGrading`)."""

    cell_seconds: float = 30.0        # each cell of the notebook
    check_seconds: float = 30.0       # all the calls of one check cell's hidden and visible cases together
    submission_seconds: float = 900.0  # the whole submission, wall clock
    grace_seconds: float = 10.0       # after a time limit, how long an ignored interrupt is waited for
    startup_seconds: float = 60.0     # Python, IPython and NumPy starting in the sandbox
    memory_mb: int = 4096             # memory of the whole sandbox (its cgroup), and address space per process
    processes: int = 64               # processes and threads of one sandbox (the runner uses one)
    cpus: float = 1.0                 # CPU time per second of wall clock for the sandbox (its cgroup)
    disk_mb: int = 64                 # each of the writable folders (home and /tmp)
    text_cap: int = 100_000           # characters of stdout, and of stderr, kept per cell
    data_cap: int = 2_000_000         # bytes of rich output (images, HTML) kept per cell
    channel_cap: int = 64_000_000     # bytes of records the grader reads from one sandbox
    log_cap: int = 64_000             # bytes kept of what the sandbox writes straight to its stdout/stderr

    @classmethod
    def from_config(cls, section) -> Limits:
        values = {f.name: type(getattr(cls, f.name))(section[f.name]) for f in dataclasses.fields(cls)
                  if f.name in section}
        return cls(**values)


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create its namespaces here."""


@dataclasses.dataclass
class Run:
    """What came back from one submission's run."""

    cells: dict          # cell index -> record
    groups: dict         # grade id -> record
    status: str          # "ok", "died", "timeout" or "tampered"
    reason: str = ""     # for anything but ok: what happened, in a sentence
    where: str = ""      # the cell or check running when it happened
    log: str = ""        # the sandbox's own stdout and stderr (cut at log_cap)
    seconds: float = 0.0
    confinement: str = ""  # how the sandbox as a whole was limited (a cgroup, a seccomp filter) or why not
    hits: list = dataclasses.field(default_factory=list)  # the sandbox's limits it ran into, in sentences


# --- the command --------------------------------------------------------------------------------------------

def core_package() -> Path:
    spec = importlib.util.find_spec("normlab_core")
    if spec is None or not spec.submodule_search_locations:
        raise SandboxUnavailable("normlab_core is not installed in this Python environment")
    return Path(list(spec.submodule_search_locations)[0]).resolve()


def _parents(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    # The dynamic linker's cache and a minimal identity (some libraries look up the user's name).
    args += ["--perms", "0755", "--dir", "/etc", "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    return args


INSIDE_PYTHON = "/opt/normlab/python"


def environment_binds() -> tuple[list[str], str, dict]:
    """Binds for this Python, the python to run inside, and the environment variables it needs.

    A system Python (under /usr) is already there. Another one (pyenv, conda, a build of its own) is bound at
    INSIDE_PYTHON, so no path of the server shows up in tracebacks or warnings. The virtual environment is
    bound at INSIDE_VENV; its site-packages is put on PYTHONPATH when the Python is not a system one.
    """
    args = ["--perms", "0755", "--dir", "/opt", "--perms", "0755", "--dir", "/opt/normlab"]
    env = {"PYTHONPATH": INSIDE_LIB}
    base = os.path.realpath(sys.base_prefix)
    in_venv = sys.prefix != sys.base_prefix
    if in_venv:
        args += ["--ro-bind", sys.prefix, INSIDE_VENV]
    if base == "/usr" or base.startswith("/usr/"):
        python = f"{INSIDE_VENV}/bin/{Path(sys.executable).name}" if in_venv else os.path.realpath(sys.executable)
        return args, python, env
    args += ["--ro-bind", base, INSIDE_PYTHON]
    real = Path(os.path.realpath(sys.executable))
    python = str(Path(INSIDE_PYTHON) / real.relative_to(base))
    env["LD_LIBRARY_PATH"] = f"{INSIDE_PYTHON}/lib"
    if in_venv:
        import sysconfig

        purelib = Path(sysconfig.get_paths()["purelib"]).relative_to(sys.prefix)
        platlib = Path(sysconfig.get_paths()["platlib"]).relative_to(sys.prefix)
        extra = [f"{INSIDE_VENV}/{purelib}"] + ([f"{INSIDE_VENV}/{platlib}"] if platlib != purelib else [])
        env["PYTHONPATH"] = os.pathsep.join([INSIDE_LIB, *extra])
    return args, python, env


def privileged() -> bool:
    """Root runs bubblewrap without a user namespace and the runner drops to uid 65534 itself; anyone else
    gets a user namespace in which the sandbox's code is uid 65534."""
    return os.geteuid() == 0


_VERSION: list = []


def bwrap_version() -> tuple:
    """bubblewrap's version, as a tuple of ints ((0,) if it cannot be told)."""
    if not _VERSION:
        try:
            out = subprocess.run([BWRAP, "--version"], capture_output=True, text=True, timeout=10).stdout
            _VERSION.append(tuple(int(n) for n in out.split()[-1].split(".")))
        except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
            _VERSION.append((0,))
    return _VERSION[0]


def _setuid_bwrap() -> bool:
    try:
        return bool(os.stat(BWRAP).st_mode & 0o4000)
    except OSError:
        return False


def bwrap_command(limits: Limits, assignment: str = "work", files=(), seccomp_fd: int | None = None) -> list[str]:
    """The bwrap command line; `files` are (host path, name) pairs: the submission's own files besides the
    notebook, bound read-only into its working folder; `seccomp_fd` an open file with the filter to load."""
    env_binds, python, python_env = environment_binds()
    version = bwrap_version()
    cmd = [BWRAP, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
           "--die-with-parent", "--new-session", "--hostname", "grading"]
    if privileged():
        # Root sets up the namespaces; the runner's first act is to become uid 65534, which drops the last
        # two capabilities kept here (needed for that switch) and makes the process limit count.
        # No user namespace here, so no --disable-userns: bubblewrap maps the sandbox's one user id to the
        # caller's, and the student's code would then be uid 0 of the machine. The seccomp filter keeps it
        # from making namespaces instead.
        cmd += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        cmd += ["--unshare-user", "--uid", str(UNPRIVILEGED), "--gid", str(UNPRIVILEGED)]
        if version >= (0, 8):
            cmd += ["--disable-userns"]  # no namespaces of its own inside
    cmd += _system_binds() + env_binds
    # The size of the writable folders needs bubblewrap 0.7 (and a bwrap that is not setuid).
    size = ["--size", str(limits.disk_mb << 20)] if version >= (0, 7) and not _setuid_bwrap() else []
    cmd += ["--perms", "0755", "--dir", INSIDE_LIB, "--ro-bind", str(graded_core.graded_copy(core_package())),
            f"{INSIDE_LIB}/normlab_core",
            "--ro-bind", str(RUNNER), INSIDE_RUNNER,
            "--perms", "0755", "--dir", f"{INSIDE_LIB}/normlab_grading",
            *[a for name in INSIDE_GRADING
              for a in ("--ro-bind", str(HERE / name), f"{INSIDE_LIB}/normlab_grading/{name}")],
            "--proc", "/proc", "--dev", "/dev",
            *size, "--perms", "1777", "--tmpfs", "/tmp",
            "--perms", "0755", "--dir", "/home",
            *size, "--perms", "0777", "--tmpfs", HOME,
            "--perms", "0777", "--dir", f"{HOME}/{assignment}"]
    for path, name in files:
        cmd += ["--ro-bind", str(path), f"{HOME}/{assignment}/{name}"]
    cmd += ["--chdir", f"{HOME}/{assignment}", "--clearenv"]
    for key, value in {**sandbox_environment(), **python_env}.items():
        cmd += ["--setenv", key, value]
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
    return cmd + ["--", python, "-s", "-B", INSIDE_RUNNER]


def sandbox_environment() -> dict[str, str]:
    return {
        "HOME": HOME, "USER": "student", "LOGNAME": "student", "LANG": "C.UTF-8", "TERM": "dumb",
        "PATH": f"{INSIDE_VENV}/bin:/usr/local/bin:/usr/bin:/bin",
        "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline", "MPLCONFIGDIR": "/tmp/matplotlib",
        "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    }


def unsafe_command() -> list[str]:
    """The runner without a sandbox (only with the grader's explicit unsafe flag): same limits on time,
    memory and output, but the student's code can read and write whatever the grading account can."""
    return [sys.executable, "-s", "-B", str(RUNNER)]


def unsafe_environment() -> dict[str, str]:
    """The environment of the runner without a sandbox: the grader's own, with the thread and plotting
    settings of the sandbox, and this package importable (the runner imports `normlab_grading.wire`)."""
    env = dict(os.environ, **{k: v for k, v in sandbox_environment().items()
                              if k.startswith(("OMP", "OPENBLAS", "MKL", "MPL", "PYTHONH"))})
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


_CHECKED: dict = {}


def check_sandbox() -> None:
    """Raise SandboxUnavailable, saying why and what to do, unless bubblewrap works here."""
    if "ok" in _CHECKED:
        if _CHECKED["ok"] is not True:
            raise SandboxUnavailable(_CHECKED["ok"])
        return
    problem = None
    global BWRAP
    if not os.path.exists(BWRAP) and shutil.which("bwrap"):
        BWRAP = shutil.which("bwrap")
    if not os.path.exists(BWRAP):
        problem = "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    elif bwrap_version() < (0, 5):
        problem = f"bubblewrap {'.'.join(map(str, bwrap_version()))} is too old: 0.5 or later is needed"
    else:
        cmd = bwrap_command(Limits())
        cmd = cmd[: cmd.index("--")] + ["--", cmd[cmd.index("--") + 1], "-c", "import numpy, IPython"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if proc.returncode != 0:
                problem = f"bubblewrap could not start a sandbox here: {(proc.stderr or proc.stdout).strip()[-500:]}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            problem = f"bubblewrap could not start a sandbox here: {exc}"
    _CHECKED["ok"] = problem or True
    if problem:
        raise SandboxUnavailable(problem)


# --- running --------------------------------------------------------------------------------------------------

def rlimits(limits: Limits) -> dict:
    """The resource limits the runner applies to itself (and so to everything it starts), by name."""
    cpu = int(limits.submission_seconds) + 1
    return {"AS": [limits.memory_mb << 20] * 2, "CPU": [cpu, cpu + 5], "NOFILE": [256, 256], "CORE": [0, 0],
            "FSIZE": [(limits.disk_mb * 4) << 20] * 2}


class Tampered(Exception):
    """The runner sent a record out of turn, or one that is not a record."""


class Protocol:
    """The grader's side of the conversation with one runner: which record may come next, and until when.

    Its `state` is one of
    - STARTING: waiting for the runner's `ready`, within `startup_seconds`;
    - CELLS: one `cell` record per code cell, in order, each within the cell's limit, then `cells-done`;
      then the request of calls (`request_for(cell records)`) is sent;
    - GROUPS: one `group` record per check cell, in the request's order, each within its budget, then `end`;
    - DONE: nothing more may come.
    Any other record, or one out of order, raises Tampered. `where` says, in words, what is running now, and
    `deadline` (a time.monotonic() value) is when the sandbox is stopped if the next record has not come.
    """

    STARTING, CELLS, GROUPS, DONE = "starting", "cells", "groups", "done"

    def __init__(self, cells: list[dict], request_for, limits: Limits, send, start: float):
        self.request_for, self.limits, self.send = request_for, limits, send
        self.state = self.STARTING
        self.expected_cells = [c["index"] for c in cells]
        self.cell_records: dict = {}
        self.group_records: dict = {}
        self.request: dict | None = None
        self.expected_groups: list = []
        self.where = "starting Python in the sandbox"
        self.deadline = start + limits.startup_seconds
        self.hard_end = start + limits.submission_seconds

    def _after(self, seconds: float) -> float:
        return min(time.monotonic() + seconds + self.limits.grace_seconds, self.hard_end)

    def current_limit(self) -> float:
        """The time limit of what runs now (a cell's, or the budget of the check cell's calls)."""
        if self.state == self.CELLS:
            return self.limits.cell_seconds
        n = len(self.group_records)
        return self.request["groups"][n]["budget"] if self.request and n < len(self.expected_groups) else 0

    def _expect_next(self) -> None:
        """Set `where` and `deadline` for the record that should come next."""
        if self.state == self.CELLS:
            n = len(self.cell_records)
            self.where = f"cell {self.expected_cells[n]}" if n < len(self.expected_cells) else "the end of the cells"
            self.deadline = self._after(self.limits.cell_seconds)
        elif self.state == self.GROUPS:
            n = len(self.group_records)
            self.where = f"the check {self.expected_groups[n]}" if n < len(self.expected_groups) \
                else "the end of the checks"
            self.deadline = self._after(self.current_limit())

    def receive(self, record) -> None:
        """Take one record from the runner (already decoded), or raise Tampered."""
        if not isinstance(record, dict):
            raise Tampered("a record that is not an object")
        {self.STARTING: self._starting, self.CELLS: self._cell, self.GROUPS: self._group,
         self.DONE: self._done}[self.state](record)

    def _starting(self, record: dict) -> None:
        if record != {"ready": True}:
            raise Tampered("records before the runner started")
        self.state = self.CELLS
        self._expect_next()

    def _cell(self, record: dict) -> None:
        if "cells-done" in record:
            if len(self.cell_records) != len(self.expected_cells) or record != {"cells-done": True}:
                raise Tampered("the end of the cells was announced early")
            self.state = self.GROUPS
            self.request = self.request_for(self.cell_records)
            self.expected_groups = [g["id"] for g in self.request["groups"]]
            self.send(self.request)
            self._expect_next()
            return
        index = record.get("cell")
        n = len(self.cell_records)
        if n >= len(self.expected_cells) or index != self.expected_cells[n] or not isinstance(record.get("outputs"),
                                                                                               list):
            raise Tampered(f"an unexpected cell record ({str(index)[:40]})")
        self.cell_records[index] = record
        self._expect_next()

    def _group(self, record: dict) -> None:
        if "end" in record:
            if len(self.group_records) != len(self.expected_groups) or record != {"end": True}:
                raise Tampered("the end of the checks was announced early")
            self.state = self.DONE
            return
        gid = record.get("group")
        n = len(self.group_records)
        if n >= len(self.expected_groups) or gid != self.expected_groups[n] or not isinstance(record.get("results"),
                                                                                              list):
            raise Tampered(f"an unexpected check record ({str(gid)[:40]})")
        self.group_records[gid] = record
        self._expect_next()

    def _done(self, record: dict) -> None:
        raise Tampered("records after the end")

    def timeout_reason(self, now: float) -> str:
        """Why the sandbox is stopped at its deadline, in a sentence."""
        if self.state == self.STARTING:
            return f"the sandbox did not start within {self.limits.startup_seconds:g} s"
        if now >= self.hard_end:
            return f"the submission used up its {self.limits.submission_seconds:g} s"
        return (f"{self.where} ignored the interrupt at its time limit of {self.current_limit():g} s and was stopped "
                f"{self.limits.grace_seconds:g} s later")


class Channel:
    """The records on the runner's descriptor, split into lines and decoded; what the sandbox writes to its
    stdout and stderr goes to the log (cut at log_cap)."""

    def __init__(self, read_fd: int, proc, limits: Limits):
        self.read_fd, self.limits = read_fd, limits
        self.sel = selectors.DefaultSelector()
        self.sel.register(read_fd, selectors.EVENT_READ, "records")
        self.sel.register(proc.stdout, selectors.EVENT_READ, "log")
        self.sel.register(proc.stderr, selectors.EVENT_READ, "log")
        self.log = bytearray()
        self.log_total = 0
        self.buffer = bytearray()
        self.received = 0
        self.closed = False     # the runner's end of the records was closed

    def lines(self, timeout: float) -> list:
        """The whole lines of records that arrived within `timeout` seconds."""
        out = []
        for key, _ in self.sel.select(timeout=timeout):
            if key.data == "log":
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    self.sel.unregister(key.fileobj)
                    continue
                self.log_total += len(chunk)
                if len(self.log) < self.limits.log_cap:
                    self.log += chunk[: self.limits.log_cap - len(self.log)]
                continue
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                self.sel.unregister(self.read_fd)
                self.closed = True
                continue
            self.received += len(chunk)
            if self.received > self.limits.channel_cap:
                raise Tampered(f"more than {self.limits.channel_cap:,} bytes of records")
            self.buffer += chunk
            while b"\n" in self.buffer:
                line, _, rest = bytes(self.buffer).partition(b"\n")
                self.buffer = bytearray(rest)
                out.append(line)
        return out

    def text(self) -> str:
        text = self.log.decode("utf-8", "replace")
        if self.log_total > len(self.log):
            text += f"\n[log cut: the sandbox wrote {self.log_total:,} bytes straight to its stdout/stderr]\n"
        return text

    def close(self) -> None:
        self.sel.close()
        os.close(self.read_fd)


def _decode(line: bytes):
    try:
        record = wire.decode_line(line)
    except RecursionError:
        raise Tampered("a record nested too deeply") from None
    except ValueError:
        raise Tampered("a line that is not a record") from None
    try:
        return _plain(record)
    except ValueError as exc:
        raise Tampered(f"a record {exc}") from None


def _sender(proc):
    def send(obj) -> None:
        data = wire.encode_line(obj)

        def write():
            try:
                proc.stdin.write(data)
                proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass

        threading.Thread(target=write, daemon=True).start()

    return send


def run_submission(cells: list[dict], request_for, limits: Limits, *, sandbox: bool = True,
                   assignment: str = "work", concurrent: int = 1, files=()) -> Run:
    """Run the code cells (`[{"index": i, "source": ...}]`) in a fresh sandbox, then the calls that
    `request_for(cell_records)` returns (a `wire.request` of groups, each with an `id`, a `budget` in seconds,
    the normlab_core modules to trip on, and its `calls`). Returns what came back, checked by `Protocol`."""
    start = time.monotonic()
    program, no_filter = sandbox_limits.seccomp_filter() if sandbox else (None, "")
    filter_file = sandbox_limits.filter_file(program) if program else None
    try:
        cmd = (bwrap_command(limits, assignment, files, filter_file.fileno() if filter_file else None)
               if sandbox else unsafe_command())
    except BaseException:
        if filter_file:
            filter_file.close()
        raise
    group, confinement = confine(limits)
    if sandbox:
        confinement += "; seccomp filter on" if program else f"; seccomp filter off: {no_filter}"
    if group:
        cmd = join_command(group) + cmd
    read_fd, write_fd = os.pipe()
    job = {"result_fd": write_fd, "cells": cells, "cell_limit": limits.cell_seconds,
           "text_cap": limits.text_cap, "data_cap": limits.data_cap}
    # Without a cgroup, RLIMIT_NPROC is the process limit: it counts every process of the user id, so it is
    # shared by the sandboxes running at once.
    allowed = 0 if group else limits.processes * max(1, concurrent) + 16
    # The runner sets its own limits (memory, CPU time, file sizes, open files, processes) before any
    # student code runs; bubblewrap itself is not limited, but it runs in the cgroup from its start.
    job["rlimits"] = rlimits(limits)
    env = None if sandbox else unsafe_environment()
    passed = (write_fd,) + ((filter_file.fileno(),) if filter_file else ())
    try:
        if sandbox and privileged():
            job.update(uid=UNPRIVILEGED, gid=UNPRIVILEGED, nproc=allowed)
        elif sandbox and allowed:
            # The limit counts every process and thread of the (real) user: those already running come on top.
            job["nproc"] = _tasks_of_this_user() + allowed
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                pass_fds=passed, start_new_session=True, env=env,
                                cwd=None if sandbox else _scratch())
    except BaseException:
        os.close(read_fd)
        release(group, limits)
        raise
    finally:
        os.close(write_fd)
        if filter_file:
            filter_file.close()

    send = _sender(proc)
    send(job)
    protocol = Protocol(cells, request_for, limits, send, start)
    channel = Channel(read_fd, proc, limits)
    status, reason = "ok", ""
    try:
        while protocol.state != Protocol.DONE:
            now = time.monotonic()
            if now > protocol.deadline:
                status, reason = "timeout", protocol.timeout_reason(now)
                break
            for line in channel.lines(max(0.0, min(protocol.deadline - now, 1.0))):
                if protocol.state == Protocol.DONE:
                    raise Tampered("records after the end")
                protocol.receive(_decode(line))
            if protocol.state == Protocol.DONE and channel.buffer.strip():
                raise Tampered("records after the end")
            if channel.closed and protocol.state != Protocol.DONE:
                raise EOFError
    except Tampered as exc:
        status, reason = "tampered", f"the notebook interfered with the grader's channel: {exc}"
    except EOFError:
        status = "died"
        code = proc.poll()
        if code is None:
            try:
                code = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
        how = (f"killed by signal {-code}" if code is not None and code < 0 else
               f"exit status {code}" if code is not None else "still running")
        reason = f"the notebook's Python process ended during {protocol.where} ({how})"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        for stream in (proc.stdout, proc.stderr, proc.stdin):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        channel.close()
        hits = release(group, limits)
    if hits and status == "died":
        reason += ": " + "; ".join(hits)
    return Run(cells=protocol.cell_records, groups=protocol.group_records, status=status, reason=reason,
               where=protocol.where if status != "ok" else "", log=channel.text(), seconds=time.monotonic() - start,
               confinement=confinement, hits=hits)


# --- the sandbox as a whole: its cgroup -----------------------------------------------------------------------

def cgroup_tasks(limits: Limits) -> int:
    """The cgroup's limit on tasks: the student's processes and threads, bubblewrap's two and the runner's."""
    return limits.processes + 8


def confine(limits: Limits) -> tuple[sandbox_limits.Cgroup | None, str]:
    """A cgroup for one run, and a sentence on how the run is limited as a whole."""
    group, why = sandbox_limits.open_cgroup(limits.memory_mb << 20, cgroup_tasks(limits), limits.cpus)
    if group is None:
        return None, f"per-process limits only (no cgroup: {why})"
    return group, (f"{group.describe()}: {limits.memory_mb} MB, {cgroup_tasks(limits)} processes and threads, "
                   f"{limits.cpus:g} CPU")


def confinement_note(limits: Limits) -> str:
    """A warning for the instructor when sandboxes cannot be limited as a whole here ("" when they can)."""
    group, how = confine(limits)
    release(group, limits)
    _, no_filter = sandbox_limits.seccomp_filter()
    notes = []
    if group is None:
        notes.append(f"WARNING: {how}: memory and the process count are limited per process and per user, so "
                     "sandboxes running at once share them")
    if no_filter:
        notes.append(f"WARNING: seccomp filter off ({no_filter}): the student's code may make namespaces of its own")
    return "\n".join(notes)


# A shell that moves itself into the cgroup, then becomes bubblewrap (or the runner): everything the sandbox
# starts is in the cgroup from the first instruction on.
JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


def join_command(group) -> list[str]:
    return ["/bin/sh", "-c", JOIN, "normlab-join", *group.procs_files(), "--"]


def release(group, limits: Limits) -> list[str]:
    """What the run ran into (in sentences), once whatever is left in its cgroup is killed and the cgroup gone."""
    if group is None:
        return []
    hits = group.hits()
    out = []
    try:
        group.remove()
    except OSError as exc:
        out.append(f"the sandbox's cgroup could not be removed ({exc})")
    if hits["memory"]:
        out.append(f"the sandbox reached its memory limit of {limits.memory_mb} MB "
                   f"({hits['memory']} process(es) killed)")
    if hits["processes"]:
        out.append(f"the sandbox reached its limit of {cgroup_tasks(limits)} processes and threads "
                   f"({hits['processes']} refused)")
    return out


def _plain(record):
    """A record with its lone surrogates replaced (structure.plain; imported here so that this module stays
    importable on its own)."""
    from normlab_grading.structure import plain

    return plain(record, max_depth=RECORD_DEPTH)


RECORD_DEPTH = 64   # the runner describes values at most 6 levels deep; a record is a few levels more


def _tasks_of_this_user() -> int:
    """Processes and threads that this user runs now (the base of RLIMIT_NPROC for an ordinary user)."""
    uid, total = os.getuid(), 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:
            continue
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            total += int(fields.get("Threads", "1").strip() or 1)
    return total


_SCRATCH: list = []


def _scratch() -> str:
    """A working folder for runs without the sandbox."""
    import tempfile

    if not _SCRATCH:
        _SCRATCH.append(tempfile.mkdtemp(prefix="normlab-unsafe-"))
    return _SCRATCH[0]
