"""Work the grader does on a student's text outside the sandbox, kept within limits.

Reading a submission, cleaning its written answers and rendering its feedback page run in the grader's own
processes, on text the student chose. So that one submission costs no more than its own limits:

- `cap_cells`: when a submission is loaded, a cell whose source is longer than `SOURCE_CAP` characters is
  left out (its text replaced by a line saying so) and the outputs the student saved are dropped (the grader
  runs the notebook again); `structure.load` refuses a notebook file over `structure.NOTEBOOK_BYTES`;
- `call`: a function run in a forked child with a memory limit (RLIMIT_AS) and a time limit (a CPU limit, and
  the parent kills the child at its deadline); the Markdown clean-up of a submission and every feedback page
  run so. Over a limit, the caller gets `Exceeded` with the reason and shows plain, escaped text instead.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import select
import signal
import time

SOURCE_CAP = 100_000          # characters of one cell's source (the longest reference answer is < 3,000)
CLEAN_SECONDS = 20.0          # the Markdown clean-up of one submission, all its cells together
CLEAN_MEMORY = 1 << 30        # bytes of address space for that clean-up (on top of nothing: RLIMIT_AS)
FEEDBACK_SECONDS = 120.0      # one feedback page (wall clock: a loaded machine can take 30 s for one)
FEEDBACK_MEMORY = 2 << 30     # bytes of address space for the process writing one feedback page


class Exceeded(RuntimeError):
    """The bounded work went over its time or memory limit, or its process died."""


def left_out_note(kind: str, size: int) -> str:
    """The text that stands in a cell whose source was over the cap (a code cell gets it as a comment)."""
    text = (f"[left out when graded: this {kind} cell has {size:,} characters, more than the {SOURCE_CAP:,} "
            "kept for one cell; your instructor will look at it]")
    return "# " + text if kind == "code" else text


def cap_cells(nb: dict) -> list[str]:
    """Cap the cells of a loaded notebook in place (see the module's text); returns what to review."""
    review = []
    for index, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
        cell.pop("attachments", None)
        source = cell.get("source", "")
        if len(source) > SOURCE_CAP:
            cell["source"] = left_out_note(cell.get("cell_type", "raw"), len(source))
            review.append(f"cell {index}: its source ({len(source):,} characters) is over the {SOURCE_CAP:,} "
                          "kept for one cell and was left out; read it in submitted/")
    return review


def _limit(memory: int, seconds: float) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = max(1, int(seconds + 1))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class Child:
    """fn(*args) started in a forked child under the limits; the parent reads its answer with `pump` (or waits in
    `select` on it: it has a fileno) and gets the value, or Exceeded, from `result`."""

    def __init__(self, fn, args: tuple, seconds: float, memory: int):
        self.seconds, self.memory = seconds, memory
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:   # the child: limits first, then the work; it never returns into the caller's code
            os.close(read_end)
            code = 0
            try:
                _limit(memory, seconds)
                try:
                    payload = pickle.dumps(("ok", fn(*args)))
                except MemoryError:
                    payload = pickle.dumps(("memory", ""))
                except BaseException as exc:  # noqa: BLE001 - reported to the parent
                    payload = pickle.dumps(("error", f"{type(exc).__name__}: {str(exc)[:300]}"))
                with os.fdopen(write_end, "wb") as fh:
                    fh.write(payload)
            except BaseException:  # noqa: BLE001 - nothing more can be said from here
                code = 1
            finally:
                os._exit(code)
        os.close(write_end)
        self.pid, self.fd, self.chunks = pid, read_end, []
        self.deadline = time.monotonic() + seconds
        self.done = self.timed_out = False

    def fileno(self) -> int:
        return self.fd

    def pump(self) -> None:
        """Read what the child has written; `done` once it has closed its end."""
        chunk = os.read(self.fd, 1 << 20)
        if chunk:
            self.chunks.append(chunk)
        else:
            self.done = True

    def stop(self) -> None:
        """Kill the child at its deadline."""
        self.timed_out = self.done = True
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def result(self):
        os.close(self.fd)
        _, status = os.waitpid(self.pid, 0)
        if self.timed_out:
            raise Exceeded(f"it took longer than its time limit of {self.seconds:g} s")
        try:
            kind, value = pickle.loads(b"".join(self.chunks))
        except Exception:  # noqa: BLE001 - the child died before it could answer (a CPU or memory limit)
            if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
                raise Exceeded(f"it took longer than its time limit of {self.seconds:g} s") from None
            raise Exceeded(f"its process ended without an answer (status {status}), near its memory limit of "
                           f"{self.memory >> 20} MB") from None
        if kind == "memory":
            raise Exceeded(f"it needed more than its memory limit of {self.memory >> 20} MB")
        if kind == "error":
            raise Exceeded(f"it failed ({value})")
        return value


class Lines:
    """The lines (JSON values) written to a pipe, read as they come, for `wait` beside the children."""

    def __init__(self, fd: int):
        self.fd, self.buffer, self.items, self.done = fd, b"", [], False

    def fileno(self) -> int:
        return self.fd

    def pump(self) -> None:
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.done = True
            os.close(self.fd)
            return
        *whole, self.buffer = (self.buffer + chunk).split(b"\n")
        self.items += [json.loads(line) for line in whole if line]


def wait(children: list, others: tuple = ()) -> None:
    """Wait until one of `children` has written, ended or reached its deadline (then it is stopped), or one of
    `others` (such as `Lines`) has something to read."""
    now = time.monotonic()
    for child in children:
        if child.deadline <= now:
            child.stop()
    live = [c for c in children if not c.done]
    if len(live) < len(children):
        return
    readers = live + [o for o in others if not o.done]
    if not readers:
        return
    timeout = max(0.0, min(c.deadline for c in live) - now) if live else None
    ready, _, _ = select.select(readers, [], [], timeout)
    for reader in ready:
        reader.pump()


def call(fn, args: tuple, seconds: float, memory: int):
    """fn(*args) in a forked child under the limits; its (picklable) return value, or Exceeded naming the limit.
    An exception raised by fn is raised here again as Exceeded with its type and message."""
    child = Child(fn, args, seconds, memory)
    while not child.done:
        wait([child])
    return child.result()
