"""A classroom on this machine: JupyterHub on 127.0.0.1, one instructor and a class of students (`make classroom`).

    sudo .venv/bin/python -m scripts.classroom [--students 3] [--prefix nl-]

Must run as root: it creates real Unix accounts (the instructor and each student, with a home folder of mode
700 and a random password), a file-system exchange for nbgrader, the instructor's course folder (a copy of
assignments/ with chapter 23 generated), and starts JupyterHub (classroom/jupyterhub_config.py) with
configurable-http-proxy from npm. It prints the URL and the accounts, and on Ctrl-C stops the hub and every
user's server, deletes the accounts with their homes, and the exchange.

`Classroom` is also what tests/test_classroom.py drives.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HUB_DIR = ROOT / "classroom"
if str(ROOT / "assignments") not in sys.path:
    sys.path.insert(0, str(ROOT / "assignments"))
from normlab_grading import ids  # noqa: E402 - the course's student-id rule

PROXY = HUB_DIR / "node_modules" / ".bin" / "configurable-http-proxy"
COURSE_ID = "normlab"
ASSIGNMENT = "chapter23"
STUDENT_NAMES = ("ada", "ben", "cleo", "dan", "eli", "fay", "gus", "hal")
ROSTER_SURNAME = "Example"   # every student's last name in the roster the classroom imports


class ClassroomError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def venv_bin() -> Path:
    """The project's .venv/bin (the Python running this, when it is the project's)."""
    for candidate in (Path(sys.executable).parent, ROOT / ".venv" / "bin"):
        if (candidate / "jupyterhub").is_file() and (candidate / "jupyterhub-singleuser").is_file():
            return candidate
    raise ClassroomError("jupyterhub is not installed in the project's .venv: run `make classroom-deps`")


def missing() -> list[str]:
    """What this machine lacks for a classroom (empty when it can run one)."""
    out = []
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        out.append("root (the hub creates Unix accounts and starts each user's server under its own uid)")
    for tool in ("useradd", "userdel", "chpasswd", "runuser", "make"):
        if shutil.which(tool) is None:
            out.append(f"the command {tool}")
    if not PROXY.is_file():
        out.append(f"configurable-http-proxy ({PROXY}; `make classroom-deps` installs it with npm ci)")
    try:
        venv_bin()
    except ClassroomError as exc:
        out.append(str(exc))
    return out


def _password() -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(16))


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        raise ClassroomError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def _traversable(path: Path) -> list[Path]:
    """The folders above `path` (itself included) that other users cannot enter."""
    return [p for p in [path, *path.parents] if p.is_dir() and not os.stat(p).st_mode & 0o001]


class Classroom:
    """The hub, its accounts and its exchange. Use as a context manager: everything it made goes on exit.

    `instructor`, `students` are the user names; `passwords[name]`; `url` the hub's address; `course` the
    instructor's course folder; `exchange` the exchange root; `as_user(name, cmd)` runs a command as that user."""

    def __init__(self, n_students: int = 3, prefix: str | None = None, startup_timeout: float = 90.0,
                 server_args: list[str] | None = None):
        if not 1 <= n_students <= len(STUDENT_NAMES):
            raise ValueError(f"n_students: got {n_students}, expected 1 to {len(STUDENT_NAMES)}")
        problems = missing()
        if problems:
            raise ClassroomError("this machine cannot run the classroom; it lacks: " + "; ".join(problems))
        self.opened: dict[Path, int] = {}   # folders given o+x for the users' servers, with their old modes
        self.prefix = prefix if prefix is not None else f"nl{secrets.token_hex(2)}-"
        self.instructor = f"{self.prefix}teacher"
        self.students = [f"{self.prefix}{name}" for name in STUDENT_NAMES[:n_students]]
        for name in [self.instructor, *self.students]:
            if len(name) > 32 or not name.replace("-", "").isalnum() or not name[0].isalpha() or name != name.lower():
                raise ValueError(f"prefix: {self.prefix!r} makes the user name {name!r}, which is not a valid "
                                 "Unix account name (lower-case letters, digits and '-', at most 32 characters)")
            if not ids.usable(name):   # the account name is the student id in nbgrader
                raise ValueError(f"prefix: {self.prefix!r} makes the user name {name!r}: {ids.problem(name)}")
        self.passwords = {name: _password() for name in [self.instructor, *self.students]}
        self.startup_timeout = startup_timeout
        self.server_args = server_args or []
        self.state: Path | None = None
        self.created: list[str] = []
        self.proc: subprocess.Popen | None = None
        self.bin = venv_bin()

    # -- set-up ------------------------------------------------------------------------------------------
    def __enter__(self):
        try:
            self._setup()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _open_python(self):
        """Let the accounts run the project's Python. A .venv made from a Python under a private folder (pyenv in
        /root, mode 700) cannot be run by other users: each such folder gets o+x (enter, not list) until exit."""
        targets = [ROOT / ".venv" / "bin", Path(os.path.realpath(self.bin / "python"))]
        for target in targets:
            for folder in _traversable(target if target.is_dir() else target.parent):
                if folder not in self.opened:
                    self.opened[folder] = os.stat(folder).st_mode & 0o7777
                    folder.chmod(self.opened[folder] | 0o001)

    def _setup(self):
        timings = self.timings = {}
        t0 = time.monotonic()
        self._open_python()
        self.state = Path(tempfile.mkdtemp(prefix="normlab-classroom-"))
        self.state.chmod(0o755)                      # users reach the exchange and their homes below it
        self.homes = self.state / "home"
        self.homes.mkdir(mode=0o755)
        # nbgrader's exchange: a folder every user can write to (nbgrader's docs: chmod ugo+rw; its release
        # command sets 777 on the root itself). Inside, nbgrader sets the modes: inbound/ is write-only for
        # students (2733), so no student can list or read another's submission; feedback/ is 711, a student
        # fetches a file only by its name, a hash of their own submission.
        self.exchange = self.state / "exchange"
        self.exchange.mkdir()
        self.exchange.chmod(0o777)
        for name in [self.instructor, *self.students]:
            self._add_user(name)
        timings["accounts"] = time.monotonic() - t0

        t0 = time.monotonic()
        self.course = self.home(self.instructor) / "course"
        release = self._make_course()       # `make release` runs while the hub starts
        self._start_hub()
        timings["hub"] = time.monotonic() - t0
        try:
            out, err = release.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            release.kill()
            out, err = release.communicate()
        if release.returncode != 0:
            raise ClassroomError(f"make release in the course folder failed:\n{out}\n{err}")
        self._import_roster()
        timings["hub and course"] = time.monotonic() - t0

    def _import_roster(self):
        """The students' names in the gradebook, as an instructor brings in a class list (the guide: `nbgrader db
        student import`): ~/roster.csv with one row per student, so the formgrader lists names, not "None"."""
        roster = self.home(self.instructor) / "roster.csv"
        with roster.open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["id", "first_name", "last_name", "email"])
            for name in self.students:
                writer.writerow([name, self.first_name(name), ROSTER_SURNAME, f"{name}@example.org"])
        _run(["chown", f"{self.instructor}:{self.instructor}", str(roster)])
        done = self.as_user(self.instructor, [str(self.bin / "nbgrader"), "db", "student", "import", str(roster)],
                            cwd=self.course)
        if done.returncode != 0:
            raise ClassroomError(f"nbgrader db student import failed:\n{done.stdout}\n{done.stderr}")

    def first_name(self, student: str) -> str:
        """The roster's first name of `student` (the account name without the prefix, capitalized: "Ada")."""
        return student[len(self.prefix):].capitalize()

    def home(self, name: str) -> Path:
        return self.homes / name

    def _add_user(self, name: str):
        try:
            pwd.getpwnam(name)
        except KeyError:
            pass
        else:
            raise ClassroomError(f"the account {name} exists already; choose another --prefix")
        _run(["useradd", "--create-home", "--home-dir", str(self.home(name)), "--shell", "/bin/bash",
              "--comment", "normlab classroom", "--user-group", name])
        self.created.append(name)
        self.home(name).chmod(0o700)
        _run(["chpasswd"], input=f"{name}:{self.passwords[name]}\n")

    def as_user(self, name: str, cmd: list[str], timeout: float = 600, **kw) -> subprocess.CompletedProcess:
        """`cmd` run as `name` from their home folder, with the environment their server has."""
        proc = self.start_as_user(name, cmd, **kw)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def start_as_user(self, name: str, cmd: list[str], **kw) -> subprocess.Popen:
        env = {"HOME": str(self.home(name)), "USER": name, "LOGNAME": name, "NORMLAB_EXCHANGE": str(self.exchange),
               "PATH": os.pathsep.join([str(self.bin), "/usr/local/bin", "/usr/bin", "/bin"]), "MPLBACKEND": "Agg",
               "LANG": "C.UTF-8"}
        role = "instructor" if name == self.instructor else "student"
        env["JUPYTER_CONFIG_PATH"] = str(HUB_DIR / role)
        return subprocess.Popen(["runuser", "-u", name, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
                                 *cmd], cwd=kw.pop("cwd", self.home(name)), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **kw)

    def _make_course(self) -> subprocess.Popen:
        """The instructor's course folder: assignments/ copied (configuration, grader, sources), and the
        instructor's nbgrader settings pointing at it; returns `make release` (chapter 23 generated) started."""
        from scripts import make_exercises

        make_exercises.copy_course(self.course)
        jupyter_dir = self.home(self.instructor) / ".jupyter"
        jupyter_dir.mkdir()
        # nbgrader's "one class, one grader" set-up: the instructor's own nbgrader_config.py names the course
        # folder, so that the formgrader in their server finds it; the course's own file is loaded from there.
        (jupyter_dir / "nbgrader_config.py").write_text(
            "# The classroom's instructor: the formgrader's course (written by scripts/classroom.py).\n"
            "c = get_config()  # noqa: F821\n"
            f"c.CourseDirectory.root = {str(self.course)!r}\n"
            f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
            f"load_subconfig({str(self.course / 'nbgrader_config.py')!r})  # noqa: F821\n"
            "# A submission after the due date does not replace the last one before it (the guide's policy).\n"
            "c.ExchangeCollect.before_duedate = True\n", encoding="utf-8")
        _run(["chown", "-R", f"{self.instructor}:{self.instructor}", str(self.home(self.instructor))])
        return self.start_as_user(self.instructor, ["make", "-C", str(self.course), "release",
                                                    f"PYTHON={self.bin}/python"])

    def _start_hub(self):
        self.port, self.hub_port, self.proxy_api_port = free_port(), free_port(), free_port()
        while len({self.port, self.hub_port, self.proxy_api_port}) < 3:
            self.hub_port, self.proxy_api_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        settings = {"state": str(self.state), "port": self.port, "hub_port": self.hub_port,
                    "proxy_api_port": self.proxy_api_port, "proxy_token": secrets.token_hex(32),
                    "instructor": self.instructor, "students": self.students, "exchange": str(self.exchange),
                    "venv_bin": str(self.bin), "server_args": self.server_args}
        hub_state = self.state / "hub"
        hub_state.mkdir(mode=0o700)
        settings["state"] = str(hub_state)
        path = hub_state / "classroom.json"
        path.write_text(json.dumps(settings, indent=1), encoding="utf-8")
        path.chmod(0o600)
        self.log_path = hub_state / "jupyterhub.log"
        env = {**os.environ, "NORMLAB_CLASSROOM": str(path),
               "PATH": os.pathsep.join([str(self.bin), os.environ.get("PATH", "/usr/bin:/bin")])}
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in __exit__
        self.proc = subprocess.Popen([str(self.bin / "jupyterhub"), "-f", str(HUB_DIR / "jupyterhub_config.py")],
                                     cwd=hub_state, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.proc.poll() is not None:
                raise ClassroomError(f"jupyterhub exited with {self.proc.returncode}:\n{self.log()[-4000:]}")
            try:
                with urllib.request.urlopen(self.url + "hub/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ClassroomError(f"jupyterhub did not answer in {self.startup_timeout:.0f} s:\n"
                                     f"{self.log()[-4000:]}")
            time.sleep(0.3)

    def log(self) -> str:
        path = getattr(self, "log_path", None)
        return path.read_text(encoding="utf-8", errors="replace") if path and path.exists() else ""

    # -- tear-down ---------------------------------------------------------------------------------------
    def _user_pids(self) -> list[int]:
        uids = set()
        for name in self.created:
            try:
                uids.add(pwd.getpwnam(name).pw_uid)
            except KeyError:
                pass
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid in uids:
                        pids.append(int(entry.name))
                except FileNotFoundError:
                    pass
        return pids

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)   # the hub stops every user's server and the proxy
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)   # the hub's own session: the proxy, if left
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait(timeout=10)
        # what the users still run (their servers, kernels): every process of the accounts made here
        for _ in range(2):
            pids = self._user_pids()
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if pids:
                time.sleep(0.5)
        for name in reversed(self.created):
            subprocess.run(["userdel", "--remove", name], capture_output=True)
            subprocess.run(["groupdel", name], capture_output=True)   # when userdel left the group
        self.created.clear()
        if getattr(self, "_log", None):
            self._log.close()
        if self.state is not None:
            shutil.rmtree(self.state, ignore_errors=True)
        for folder, mode in self.opened.items():
            try:
                folder.chmod(mode)
            except OSError:
                pass
        self.opened.clear()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="JupyterHub on 127.0.0.1 with an instructor and students")
    parser.add_argument("--students", type=int, default=3)
    parser.add_argument("--prefix", default="nl-", help="start of every account's name (default: nl-)")
    args = parser.parse_args(argv)
    problems = missing()
    if problems:
        print("make classroom needs " + "; ".join(problems), file=sys.stderr)
        return 2
    print("Creating the accounts, the exchange and the course, and starting the hub ...", flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    try:
        with Classroom(args.students, prefix=args.prefix, startup_timeout=120) as room:
            print(f"\nThe classroom hub is at {room.url}  (this machine only: 127.0.0.1)\n")
            print(f"  {'account':<16} {'password':<18} role")
            print(f"  {room.instructor:<16} {room.passwords[room.instructor]:<18} instructor: Formgrader at "
                  f"{room.url}user/{room.instructor}/formgrader")
            for s in room.students:
                print(f"  {s:<16} {room.passwords[s]:<18} student: Nbgrader > Assignments in JupyterLab")
            print(f"\nCourse folder: {room.course} (run `make grade` there as {room.instructor}: "
                  f"runuser -u {room.instructor} -- make -C {room.course} grade PYTHON={room.bin}/python)")
            print(f"Exchange: {room.exchange}\nHub log: {room.log_path}")
            print("\nCtrl-C stops the hub and deletes the accounts, their homes and the exchange.", flush=True)
            while not stop and room.proc.poll() is None:
                time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    except (ClassroomError, ValueError) as exc:
        print(f"classroom: {exc}", file=sys.stderr)
        return 1
    print("Stopped; the accounts and the exchange are gone.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
