"""Runs one submission inside the sandbox: its cells, then calls of its functions on the grader's inputs.

This file and `wire.py` (the format of what crosses the boundary) are the only pieces of the grading code that
the sandbox can see (bound read-only), and they hold nothing worth reading: no reference, no expected value,
no seed. It uses only the standard library, IPython
and NumPy. The grader (`normlab_grading.sandbox`) starts it and talks to it over three file descriptors:

- fd 0 (from the grader): one JSON line with the notebook's code cells and the limits; later, once the cells
  have run, one JSON line with the calls to make (`groups`: for each check cell, the functions to call on
  which inputs, or the names to read);
- fd 3 (to the grader): one JSON record per line (the format of every record, input and value is
  `normlab_grading.wire`, which the grader imports too): `ready`, then one `cell` record per code cell (its outputs,
  nbformat-shaped, with text cut at the cap), `cells-done`, one `group` record per check cell (what each call
  returned, described as plain data), and `done`;
- fds 1 and 2: anything written straight to them (not through `print`) lands in the grader's log only.

The student's code runs in this process, so it can change anything here, including what is sent back. That is
why nothing here decides a grade: the grader judges the plain data it receives in its own process, against
references the sandbox never sees, and treats any record out of order as tampering.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import signal
import sys
import time
import types
import warnings

from normlab_grading import wire
from normlab_grading.wire import describe, make_value

# References taken before any student code runs (the student can rebind module attributes, not these names).
_write = os.write
_read = os.read
_dumps = json.dumps
_monotonic = time.monotonic
_setitimer = signal.setitimer
_STR, _LIST, _DICT = str, list, dict
_type = type
_FUNCTION = types.FunctionType   # a notebook that rebinds types.FunctionType switches nothing here off
_isinstance = isinstance
_import_module = importlib.import_module
_encode_line, _decode_line, _group_record = wire.encode_line, wire.decode_line, wire.group_record
_current_frames = sys._current_frames
_get_ident = __import__("threading").get_ident
_sleep = time.sleep
try:
    import ctypes as _ctypes

    _async_exc = _ctypes.pythonapi.PyThreadState_SetAsyncExc
    _async_exc.argtypes = [_ctypes.c_ulong, _ctypes.py_object]
except Exception:  # noqa: BLE001 - no ctypes here: threads are bounded by the sandbox's process limit only
    _async_exc = None

RESULT_FD = [3]  # the grader says which descriptor it passed (the first line of fd 0)
MAX_ITEMS = wire.MAX_ITEMS


class _Stopped(BaseException):
    """Raised in a check's call when its time budget is used up (a BaseException, like KeyboardInterrupt)."""


def emit(record: dict) -> None:
    view = memoryview(_encode_line(record))
    while view:
        n = _write(RESULT_FD[0], view)
        view = view[n:]


def read_line() -> dict:
    chunks = []
    while True:
        chunk = _read(0, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return _decode_line(b"".join(chunks))


# --- privileges and limits ---------------------------------------------------------------------------------

def drop_privileges(uid, gid, nproc: int) -> None:
    """As root (bubblewrap run by root, without a user namespace): become an unprivileged user id, which also
    drops every capability, so the process-count limit applies. Then limit processes and threads."""
    if uid is not None and os.geteuid() == 0:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    if nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# --- capturing what a cell shows ---------------------------------------------------------------------------

class Sink:
    """A text stream: what is written goes to `capture` as the stream `name` (or is only counted)."""

    def __init__(self, capture=None, name: str = "stdout"):
        self.capture, self.name = capture, name
        self.total = 0
        self.encoding = "utf-8"
        self.errors = "strict"

    def write(self, text) -> int:
        if not _isinstance(text, _STR):
            text = _STR(text)
        self.total += len(text)
        if self.capture is not None:
            self.capture.stream(self.name, text)
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def readable(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        raise OSError("this stream has no file descriptor while grading")


class NoInput:
    """sys.stdin while grading: input() fails at once instead of waiting for a person who is not there."""

    encoding = "utf-8"

    def readline(self, *args):
        raise EOFError("input() is not available when the notebook is graded")

    read = readlines = readline

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("no standard input when the notebook is graded")


class Capture:
    """The outputs of one cell, in nbformat's shape and in order, with caps on text and on rich data."""

    def __init__(self, text_cap: int, data_cap: int):
        self.out: list = []
        self.text_cap, self.data_cap = text_cap, data_cap
        self.text_kept = {"stdout": 0, "stderr": 0}
        self.text_total = {"stdout": 0, "stderr": 0}
        self.data_used = 0
        self.data_dropped = 0
        self.stdout = Sink(self, "stdout")
        self.stderr = Sink(self, "stderr")

    def stream(self, name: str, text: str) -> None:
        self.text_total[name] += len(text)
        room = self.text_cap - self.text_kept[name]
        if room <= 0:
            return
        piece = text[:room]
        self.text_kept[name] += len(piece)
        last = self.out[-1] if self.out else None
        if last is not None and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += piece
        else:
            self.out.append({"output_type": "stream", "name": name, "text": piece})

    def add(self, output: dict) -> None:
        size = sum(len(v) if _isinstance(v, _STR) else len(_dumps(v)) for v in output.get("data", {}).values())
        if self.data_used + size > self.data_cap:
            self.data_dropped += 1
            return
        self.data_used += size
        self.out.append(output)

    def outputs(self) -> list:
        out = list(self.out)
        for name in ("stdout", "stderr"):
            if self.text_total[name] > self.text_kept[name]:
                out.append({"output_type": "stream", "name": name,
                            "text": f"\n[output cut: this cell wrote {self.text_total[name]:,} characters to {name}; "
                                    f"the first {self.text_kept[name]:,} are kept]\n"})
        if self.data_dropped:
            out.append({"output_type": "stream", "name": "stdout",
                        "text": f"[{self.data_dropped} display output(s) left out: over the size cap]\n"})
        return out


CURRENT: list = [None]


def make_shell():
    """An IPython shell whose displays, results and tracebacks go into the current Capture."""
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    def _plain(data: dict) -> dict:
        out = {}
        for mime, value in (data or {}).items():
            if _isinstance(value, (bytes, bytearray)):
                import base64

                value = base64.b64encode(value).decode("ascii")
            elif not _isinstance(value, (_STR, _DICT, _LIST)):
                value = _STR(value)
            out[_STR(mime)] = value
        return out

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            if CURRENT[0] is not None:
                CURRENT[0].add({"output_type": "display_data", "data": _plain(data), "metadata": {}})

        def clear_output(self, wait=False):
            pass

    class Hook(DisplayHook):
        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            if CURRENT[0] is not None:
                CURRENT[0].add({"output_type": "execute_result", "data": _plain(format_dict), "metadata": {},
                                "execution_count": self.shell.execution_count})

        def finish_displayhook(self):
            pass

    class Shell(InteractiveShell):
        def _showtraceback(self, etype, evalue, stb):
            if CURRENT[0] is None:
                return
            try:
                message = _STR(evalue)
            except BaseException:  # noqa: BLE001 - a student's exception whose str() fails
                message = "(the exception's message could not be shown)"
            CURRENT[0].add({"output_type": "error", "ename": getattr(etype, "__name__", "Error"),
                            "evalue": message[:2000], "traceback": [_STR(s)[:4000] for s in stb][-30:]})

        def showsyntaxerror(self, filename=None, running_compiled_code=False):
            etype, value, last_traceback = self._get_exc_info()
            stb = self.SyntaxTB.structured_traceback(etype, value, last_traceback)
            self._showtraceback(etype, value, stb)

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    config.InteractiveShell.autocall = 0
    shell = Shell.instance(config=config, displayhook_class=Hook, display_pub_class=Publisher)
    shell.showing_traceback = False
    return shell


# --- running the cells ------------------------------------------------------------------------------------

class Alarm:
    """SIGALRM after `seconds`, then again every second, raising `exc` each time until cancelled."""

    def __init__(self, exc):
        self.exc = exc
        self.fired = False
        self.previous = signal.signal(signal.SIGALRM, self._handler)

    def _handler(self, signum, frame):
        self.fired = True
        raise self.exc()

    def start(self, seconds: float) -> None:
        self.fired = False
        _setitimer(signal.ITIMER_REAL, max(seconds, 0.001), 1.0)

    def stop(self) -> None:
        _setitimer(signal.ITIMER_REAL, 0, 0)

    def close(self) -> None:
        self.stop()
        signal.signal(signal.SIGALRM, self.previous or signal.SIG_DFL)


def stop_threads(before) -> int:
    """Raise SystemExit in every thread not in `before` (thread ids), a few times over a short while, so that
    threads a cell started do not outlive it: fifty threads spinning in Python would otherwise take the GIL from
    every later cell and check. Returns how many threads there were to stop."""
    if _async_exc is None:
        return 0
    mine = _get_ident()
    found = [t for t in _current_frames() if t not in before and t != mine]
    for _ in range(50):
        alive = [t for t in found if t in _current_frames()]
        if not alive:
            break
        for tid in alive:
            _async_exc(tid, SystemExit)
        _sleep(0.01)
    return len(found)


def run_cells(shell, job: dict) -> None:
    limit = float(job["cell_limit"])
    alarm = Alarm(KeyboardInterrupt)
    threads = set(_current_frames())   # the runner's own (and IPython's) threads, before any cell ran
    for cell in job["cells"]:
        capture = Capture(job["text_cap"], job["data_cap"])
        CURRENT[0] = capture
        sys.stdout, sys.stderr = capture.stdout, capture.stderr
        start = _monotonic()
        try:
            alarm.start(limit)
            try:
                shell.run_cell(cell["source"], store_history=True)
            finally:
                alarm.stop()
        except KeyboardInterrupt:  # the alarm fired outside IPython's own handler
            capture.add({"output_type": "error", "ename": "KeyboardInterrupt", "evalue": "", "traceback": []})
        stopped = stop_threads(threads)
        if stopped:
            capture.add({"output_type": "stream", "name": "stderr",
                         "text": f"[{stopped} thread(s) started by this cell were stopped when it ended: when the "
                                 "notebook is graded, threads do not outlive their cell]\n"})
        elapsed = _monotonic() - start
        CURRENT[0] = None
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        emit({"cell": cell["index"], "outputs": capture.outputs(), "timed_out": alarm.fired,
              "elapsed": round(elapsed, 3), "execution_count": shell.execution_count - 1})


# --- the calls the grader asks for ------------------------------------------------------------------------

_TRIPWIRES: dict = {}


def _tripwire_code(name: str, freevars: tuple):
    """A code object that records `name` in __normlab_tripped__ and raises; it has the given free variables,
    so it can replace the code of a closure (a decorated function) too."""
    if (name, freevars) in _TRIPWIRES:
        return _TRIPWIRES[name, freevars]
    outer = "".join(f"    {v} = None\n" for v in freevars)
    touch = f"        ({', '.join(freevars)},)\n" if freevars else ""
    source = (f"def _outer():\n{outer}    def _tripwire(*args, **kwargs):\n{touch}"
              f"        __normlab_tripped__.append({name!r})\n"
              f"        raise RuntimeError('this part must be computed without normlab_core.{name}')\n"
              f"    return _tripwire\n")
    scope: dict = {}
    exec(compile(source, "<tripwire>", "exec"), scope)  # noqa: S102
    code = scope["_outer"]().__code__
    _TRIPWIRES[name, freevars] = code if code.co_freevars == freevars else None
    return _TRIPWIRES[name, freevars]


def _core_functions(modules) -> list:
    found = []
    for modname in modules:
        try:   # imported here if the notebook has not, so that an import inside the student's function is caught
            _import_module(f"normlab_core.{modname}")
        except Exception:  # noqa: BLE001, S110 - a module that cannot be imported cannot be called either
            pass
        # a package counts with its submodules (normlab_core.norms and each norm's plain module)
        for fullname, module in list(sys.modules.items()):
            if module is None or not (fullname == f"normlab_core.{modname}"
                                      or fullname.startswith(f"normlab_core.{modname}.")):
                continue
            prefix = fullname[len("normlab_core."):]
            for name, obj in list(vars(module).items()):
                if _isinstance(obj, _FUNCTION) and obj.__module__ == module.__name__:
                    found.append((f"{prefix}.{name}", obj))
                elif _isinstance(obj, _type) and obj.__module__ == module.__name__:
                    for attr, meth in list(vars(obj).items()):
                        if _isinstance(meth, _FUNCTION):
                            found.append((f"{prefix}.{name}.{attr}", meth))
    return found


class Tripwires:
    """While active, normlab_core's functions in `modules` record a call and raise instead of computing.

    The notebook runs in this process and can switch the wire off; that must cost an answer of its own nothing.
    So a function found under two names (an alias the notebook made, a module put in sys.modules again under
    another name) is wired once, with its own code saved, and leaving always puts every function's own code
    back: no later check meets a tripwire left behind. Whatever the notebook broke in the search for the
    functions leaves those functions unwired rather than stopping the checks."""

    def __init__(self, modules, tripped: list):
        self.modules, self.tripped, self.saved = modules, tripped, {}

    def __enter__(self):
        try:
            found = _core_functions(self.modules)
        except Exception:  # noqa: BLE001 - the notebook broke the search (builtins, sys.modules): no wire
            found = []
        for qualname, fn in found:
            try:
                if fn in self.saved:   # functions compare and hash by identity only
                    continue
                code = _tripwire_code(qualname, fn.__code__.co_freevars)
                if code is None:
                    continue
                self.saved[fn] = fn.__code__
                fn.__globals__["__normlab_tripped__"] = self.tripped
                fn.__code__ = code
            except Exception:  # noqa: BLE001, S112 - a function that cannot be wired is left as it is
                continue
        return self

    def __exit__(self, *exc):
        for fn, code in self.saved.items():
            fn.__code__ = code
            fn.__globals__.pop("__normlab_tripped__", None)
        return False


def _spoiled_code(fn, factor: float, asarray):
    """Code for `fn` that returns `factor` times what `fn` returns: it calls a copy of `fn` (its own code, globals,
    defaults and closure) held as a constant of the code, so it reads no global and has fn's free variables."""
    original = fn.__code__
    real = _FUNCTION(original, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    real.__kwdefaults__ = fn.__kwdefaults__
    freevars = original.co_freevars
    outer = "".join(f"    {v} = None\n" for v in freevars)
    touch = f"        ({', '.join(freevars)},)\n" if freevars else ""
    source = (f"def _outer():\n{outer}    def _broken(*args, **kwargs):\n{touch}"
              f"        return {factor!r} * ('__normlab_asarray__')(('__normlab_real__')(*args, **kwargs))\n"
              f"    return _broken\n")
    scope: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # "'str' object is not callable": the constants are replaced below
        exec(compile(source, original.co_filename, "exec"), scope)  # noqa: S102
    code = scope["_outer"]().__code__
    if code.co_freevars != freevars:
        return None
    consts = tuple(real if c == "__normlab_real__" else asarray if c == "__normlab_asarray__" else c
                   for c in code.co_consts)
    return code.replace(co_consts=consts, co_name=original.co_name, co_qualname=original.co_qualname,
                        co_firstlineno=original.co_firstlineno)


def run_groups(ns: dict, request: dict, np, send=None) -> None:
    """Make the calls of every group (check cell) on the functions in `ns`; send one record per group."""
    send = send or emit
    _close_cells_only()
    alarm = Alarm(_Stopped)
    saved = sys.stdout, sys.stderr
    for group in request["groups"]:
        results: list = []
        tripped: list = []
        called_before = len(_stub_calls())
        budget = float(group["budget"])
        start = _monotonic()
        stopped = False
        sink = Sink()
        sys.stdout, sys.stderr = sink, sink
        calls = group["calls"]
        try:
            with Tripwires(group.get("tripwire", ()), tripped):
                for call in calls:
                    left = budget - (_monotonic() - start)
                    if left <= 0:
                        stopped = True
                        break
                    try:
                        results.append(one_call(ns, call, np, alarm, left))
                    except _Stopped:
                        stopped = True
                        break
        finally:
            alarm.stop()
            sys.stdout, sys.stderr = saved
        tripped += _stubs_called(group, called_before)
        send(_group_record(group["id"], results, tripped, stopped, len(calls), _monotonic() - start, sink.total))
    alarm.close()


def _close_cells_only() -> None:
    """In the graded copy of normlab_core, what only the cells may use (numerical_gradient) is a stub from now on."""
    try:
        _import_module("normlab_core._absent").CELLS[0] = False
    except Exception:  # noqa: BLE001, S110 - the real library (no sandbox): nothing to close
        pass


def _stub_calls() -> list:
    """The calls of the graded copy of normlab_core's stubs so far (none outside the sandbox)."""
    absent = sys.modules.get("normlab_core._absent")
    called = getattr(absent, "CALLED", None)
    return called if _isinstance(called, _LIST) else []


def _stubs_called(group: dict, before: int) -> list:
    """The stubs called during a group whose part must not use normlab_core (reported like a tripwire)."""
    if not group.get("tripwire"):
        return []
    return [name for name in _stub_calls()[before:] if _isinstance(name, _STR)][:10]


def one_call(ns, call, np, alarm, seconds):
    if "get" in call:
        name = call["get"]
        if name not in ns:
            return {"missing": name}
        return {"value": describe(ns[name], np, [MAX_ITEMS])}
    name = call["call"]
    if name not in ns:
        return {"missing": name}
    fn = ns[name]
    if not callable(fn):
        return {"notcallable": describe(fn, np, [1000])}
    args = [make_value(a, np) for a in call.get("args", [])]
    kwargs = {k: make_value(v, np) for k, v in call.get("kwargs", {}).items()}
    replaced, recoded = {}, []
    for other, factor in call.get("replace", {}).items():
        original = ns.get(other)
        if original is None:
            continue
        code = _spoiled_code(original, float(factor), np.asarray) if _isinstance(original, _FUNCTION) \
            else None
        if code is not None:
            # The student's own function object gets the broken code for this call: the same object, name,
            # defaults and globals, so a reference bound earlier (a default argument, an alias) calls it too,
            # and nothing but its results tells it from the honest one.
            recoded.append((original, original.__code__))
            original.__code__ = code
            continue

        def spoiled(*a, _original=original, _factor=factor, **k):
            return _factor * np.asarray(_original(*a, **k))

        replaced[other] = original
        ns[other] = spoiled
    out: dict = {}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            alarm.start(seconds)
            try:
                value = fn(*args, **kwargs)
            finally:
                alarm.stop()
        out["value"] = describe(value, np, [MAX_ITEMS])
    except _Stopped:
        raise
    except BaseException as exc:  # noqa: BLE001 - the student's function failed: report what it raised
        try:
            message = _STR(exc)[:500]
        except BaseException:  # noqa: BLE001
            message = ""
        out["error"] = {"type": getattr(_type(exc), "__name__", "Error"), "message": message}
    finally:
        for other, original in replaced.items():
            ns[other] = original
        for fn, code in recoded:
            fn.__code__ = code
    if call.get("keep"):
        out["args_after"] = {str(i): describe(args[i], np, [MAX_ITEMS]) for i in call["keep"]}
    return out


def main() -> None:
    job = read_line()
    RESULT_FD[0] = int(job.get("result_fd", 3))
    for name, (soft, hard) in job.get("rlimits", {}).items():
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (soft, hard))
    drop_privileges(job.get("uid"), job.get("gid"), int(job.get("nproc", 0)))
    # As in JupyterLab, modules in the notebook's folder can be imported (the files handed in beside it).
    sys.path.insert(0, os.getcwd())
    sys.stdin = sys.__stdin__ = NoInput()
    shell = make_shell()
    import numpy as np

    emit({"ready": True})
    run_cells(shell, job)
    emit({"cells-done": True})
    request = read_line()
    run_groups(shell.user_ns, request, np)
    emit({"end": True})
    os._exit(0)


if __name__ == "__main__":
    main()
