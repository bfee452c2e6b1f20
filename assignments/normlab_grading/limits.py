"""Limits for one sandbox as a whole: a cgroup of its own, and a seccomp filter against namespaces and mounts.

The runner's own limits (RLIMIT_AS, RLIMIT_NPROC, ...) hold per process, or per user id: they cannot stop
three processes that each stay under the memory cap, memory held in `memfd` files or tmpfs, nor one sandbox
using up the process count of all the others (they run as the same user). A cgroup per sandbox can:

- cgroup v2 (`memory.max`, `pids.max`, `cpu.max`), where the grader's cgroup hands the memory and pids
  controllers to its children (or in the folder NORMLAB_CGROUP names, which an administrator prepared);
- cgroup v1 (`memory.limit_in_bytes` and `memory.memsw.limit_in_bytes`, `pids.max`, `cpu.cfs_quota_us`),
  one child group in each controller's hierarchy, under the grader's own group there.

Memory in a cgroup counts every page the sandbox's processes use, page cache, tmpfs and memfd included. When
neither version can be used (not root and nothing delegated, a read-only /sys), `open_cgroup` says why and
the sandbox keeps the per-process limits only.

The filter (`seccomp_filter`) is built with libseccomp through ctypes and loaded by bubblewrap (`--seccomp FD`)
just before the runner starts: it refuses new namespaces, mounts, key rings, tracing, BPF, kernel modules and
the like with EPERM, and `clone3` with ENOSYS (its flags sit in a structure a filter cannot read; the C library
then falls back to `clone`, whose flags it can).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import itertools
import os
import signal
import time
from pathlib import Path

PREFIX = "normlab-"
PROC_MOUNTS = Path("/proc/self/mounts")   # where the cgroup file systems are mounted (a test points it elsewhere)
PROC_CGROUP = Path("/proc/self/cgroup")   # this process's own cgroup in each hierarchy
_NAMES = itertools.count()


# --- cgroups -----------------------------------------------------------------------------------------------

class Cgroup:
    """One sandbox's cgroup: a folder per hierarchy (one for v2, one per controller for v1)."""

    def __init__(self, version: int, folders: dict[str, Path]):
        self.version = version
        self.folders = folders  # controller ("memory", "pids", "cpu"; "all" for v2) -> folder

    def describe(self) -> str:
        return f"cgroup v{self.version}"

    def procs_files(self) -> list[str]:
        """The files a process writes its pid to, to join this cgroup in every hierarchy."""
        return [str(folder / "cgroup.procs") for folder in self.folders.values()]

    def _read(self, controller: str, name: str) -> str:
        try:
            return (self.folders[controller] / name).read_text()
        except (OSError, KeyError):
            return ""

    def hits(self) -> dict[str, int]:
        """How often the sandbox ran into its limits: {"memory": processes killed, "processes": refused forks}."""
        memory = "all" if self.version == 2 else "memory"
        pids = "all" if self.version == 2 else "pids"
        events = _fields(self._read(memory, "memory.events" if self.version == 2 else "memory.oom_control"))
        refused = _fields(self._read(pids, "pids.events")).get("max", 0)
        return {"memory": events.get("oom_kill", 0), "processes": refused}

    def remove(self, patience: float = 10.0) -> None:
        """Kill whatever is left in the cgroup, then remove its folders."""
        end = time.monotonic() + patience
        for folder in self.folders.values():
            while folder.exists():
                pids = [int(p) for p in _read_text(folder / "cgroup.procs").split()]
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                try:
                    folder.rmdir()
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > end:
                        raise
                    time.sleep(0.05)  # the killed processes are still exiting


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _fields(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            out[key] = int(value)
    return out


def _mounts() -> list[tuple[str, str, set]]:
    """(mount point, file system type, options) of the cgroup file systems."""
    out = []
    for line in _read_text(PROC_MOUNTS).splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] in ("cgroup", "cgroup2"):
            out.append((parts[1], parts[2], set(parts[3].split(","))))
    return out


def _own_groups() -> dict[str, str]:
    """This process's cgroup in each hierarchy: {"": v2 path, "memory": v1 path, ...}."""
    out = {}
    for line in _read_text(PROC_CGROUP).splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            out[name] = path
    return out


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _new_name() -> str:
    return f"{PREFIX}{os.getpid()}-{next(_NAMES)}"


def _v2(memory: int, processes: int, cpus: float) -> Cgroup:
    mounts = [m for m, kind, _ in _mounts() if kind == "cgroup2"]
    if not mounts:
        raise OSError("no cgroup2 file system is mounted")
    if os.environ.get("NORMLAB_CGROUP"):
        parent = Path(os.environ["NORMLAB_CGROUP"])
    else:
        parent = Path(mounts[0]) / _own_groups().get("", "/").lstrip("/")
    available = _read_text(parent / "cgroup.controllers").split()
    missing = {"memory", "pids"} - set(available)
    if missing:
        raise OSError(f"cgroup v2 at {parent} offers {' '.join(available) or 'no controllers'}, "
                      f"not {' '.join(sorted(missing))}")
    wanted = [c for c in ("memory", "pids", "cpu") if c in available]
    enabled = _read_text(parent / "cgroup.subtree_control").split()
    if set(wanted) - set(enabled):
        # Fails (EBUSY) when the parent holds processes itself and is not the root: then NORMLAB_CGROUP must
        # name a group prepared for the grader.
        _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
    folder = parent / _new_name()
    folder.mkdir()
    group = Cgroup(2, {"all": folder})
    try:
        _write(folder / "memory.max", str(memory))
        if (folder / "memory.swap.max").exists():
            _write(folder / "memory.swap.max", "0")
        _write(folder / "pids.max", str(processes))
        if "cpu" in wanted:
            period = 100_000
            _write(folder / "cpu.max", f"{int(cpus * period)} {period}")
    except OSError:
        group.remove()
        raise
    return group


def _v1(memory: int, processes: int, cpus: float) -> Cgroup:
    roots = {}
    for point, kind, options in _mounts():
        for controller in ("memory", "pids", "cpu"):
            if kind == "cgroup" and controller in options:
                roots[controller] = Path(point)
    missing = {"memory", "pids"} - set(roots)
    if missing:
        raise OSError(f"no cgroup v1 hierarchy for {' '.join(sorted(missing))}")
    own = _own_groups()
    group, name = Cgroup(1, {}), _new_name()
    try:
        for controller, root in roots.items():
            folder = root / own.get(controller, "/").lstrip("/") / name
            folder.mkdir()
            group.folders[controller] = folder
        memory_folder = group.folders["memory"]
        _write(memory_folder / "memory.limit_in_bytes", str(memory))
        if (memory_folder / "memory.memsw.limit_in_bytes").exists():  # memory and swap together
            _write(memory_folder / "memory.memsw.limit_in_bytes", str(memory))
        _write(group.folders["pids"] / "pids.max", str(processes))
        if "cpu" in group.folders:
            period = 100_000
            _write(group.folders["cpu"] / "cpu.cfs_period_us", str(period))
            _write(group.folders["cpu"] / "cpu.cfs_quota_us", str(int(cpus * period)))
    except OSError:
        group.remove()
        raise
    return group


def open_cgroup(memory: int, processes: int, cpus: float) -> tuple[Cgroup | None, str]:
    """A new cgroup with these limits (bytes, tasks, CPUs), or None and why none could be made."""
    problems = []
    for make in (_v2, _v1):
        try:
            return make(memory, processes, cpus), ""
        except (OSError, ValueError) as exc:
            problems.append(f"cgroup {make.__name__[1:]}: {exc}")
    return None, "; ".join(problems)


def leftovers() -> list[Path]:
    """Cgroup folders of sandboxes of this process that are still there (none once every run has ended)."""
    found = []
    own = _own_groups()
    for point, kind, options in _mounts():
        keys = [""] if kind == "cgroup2" else [c for c in options if c in own]
        for key in keys:
            parent = Path(point) / own.get(key, "/").lstrip("/")
            found += sorted(parent.glob(f"{PREFIX}{os.getpid()}-*"))
    return found


# --- seccomp -----------------------------------------------------------------------------------------------

ALLOW = 0x7FFF0000  # SCMP_ACT_ALLOW


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)  # SCMP_ACT_ERRNO(code)


MASKED_EQ = 7  # SCMP_CMP_MASKED_EQ: (argument & mask) == value

NAMESPACE_FLAGS = {  # <sched.h>
    "CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}

REFUSED = (  # refused with EPERM whatever their arguments
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "keyctl", "add_key", "request_key", "ptrace",
    "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open", "userfaultfd", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "swapon", "swapoff", "reboot", "acct",
    "quotactl", "iopl", "ioperm", "name_to_handle_at", "open_by_handle_at", "lookup_dcookie",
)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


def _libseccomp():
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    lib = ctypes.CDLL(name, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def _build_filter(fd: int) -> None:
    lib = _libseccomp()
    ctx = lib.seccomp_init(ALLOW)
    if not ctx:
        raise OSError("seccomp_init failed")
    try:
        def refuse(name: str, code: int, *cmps: _ArgCmp) -> None:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number < 0:  # not a system call on this architecture
                return
            array = (_ArgCmp * len(cmps))(*cmps) if cmps else None
            rc = lib.seccomp_rule_add_array(ctx, _errno_action(code), number, len(cmps), array)
            if rc < 0:
                raise OSError(-rc, f"seccomp_rule_add({name}): {os.strerror(-rc)}")

        for name in REFUSED:
            refuse(name, errno.EPERM)
        # clone's first argument holds its flags (on x86-64 and arm64; s390 swaps the first two).
        for flag in NAMESPACE_FLAGS.values():
            refuse("clone", errno.EPERM, _ArgCmp(0, MASKED_EQ, flag, flag))
        refuse("clone3", errno.ENOSYS)
        rc = lib.seccomp_export_bpf(ctx, fd)
        if rc < 0:
            raise OSError(-rc, f"seccomp_export_bpf: {os.strerror(-rc)}")
    finally:
        lib.seccomp_release(ctx)


@functools.cache
def seccomp_filter() -> tuple[bytes | None, str]:
    """The compiled filter (a BPF program for bubblewrap's --seccomp), or None and why there is none; built once
    (seccomp_filter.cache_clear() builds it again)."""
    import tempfile

    try:
        with tempfile.TemporaryFile() as fh:
            _build_filter(fh.fileno())
            fh.seek(0)
            return fh.read(), ""
    except (OSError, AttributeError) as exc:
        return None, f"libseccomp could not build the filter ({exc})"


def filter_file(program: bytes):
    """An open, unlinked file holding the filter, at its start, for bubblewrap to read through its fd."""
    import tempfile

    fh = tempfile.TemporaryFile()
    fh.write(program)
    fh.flush()
    fh.seek(0)
    return fh
