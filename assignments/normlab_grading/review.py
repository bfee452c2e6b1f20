"""Look through submissions for code that tampers with grading, reads what it should not, or delegates.

The grader judges outside the student's code (grade.py, hidden_checks.py) and runs it in a sandbox, so none of
this can change a score any more; what it still shows is copying, defensive code and attempts, which an
instructor wants to know about. The scan reads every code cell that a student could write (answer cells and
cells they added) and lists the constructs such code needs. A hit is not proof of cheating (a curious student
may define `__eq__`), it is a reason to open the notebook.

    python -m normlab_grading.review submitted/*/chapter23/exercises.ipynb
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

PATTERNS: list[tuple[str, re.Pattern]] = [
    ("rewrites the kernel's input or hooks its events",
     re.compile(r"input_transformers|ast_transformers|register_transformer|events\s*\.\s*register|"
                r"register_magic|get_ipython\s*\(")),
    ("traces the interpreter or starts threads or processes",
     re.compile(r"sys\s*\.\s*(settrace|setprofile|_getframe|addaudithook)|\bthreading\b|\b_thread\b|"
                r"multiprocessing|subprocess")),
    ("ends or signals the kernel", re.compile(r"os\s*\.\s*(_exit|kill|abort)|sys\s*\.\s*exit|\bsignal\s*\.")),
    ("defines comparison or conversion methods (an answer that equals anything)",
     re.compile(r"def\s+__(eq|ne|lt|le|gt|ge|bool|float|int|index|array|array_ufunc|array_function)__|"
                r"__class__\s*=(?!=)")),
    ("uses normlab_core in an answer cell", re.compile(r"normlab_core")),
    ("replaces functions at run time (monkeypatching)",
     re.compile(r"\bbuiltins\b|__builtins__|\bsetattr\s*\(|__code__|sys\s*\.\s*modules|"
                r"\b(np|numpy|math|normlab_core)(\s*\.\s*\w+)+\s*=(?!=)")),
    ("reads stack frames (the caller's variables)",
     re.compile(r"\b(tb_frame|f_back|f_locals|f_globals|gi_frame|cr_frame|__traceback__|exc_info)\b")),
    ("runs code built at run time", re.compile(r"\b(exec|eval|compile|__import__)\s*\(|importlib|\bctypes\b|"
                                               r"\bgc\s*\.|\binspect\s*\.|base64|codecs")),
    ("writes to file descriptors or looks for the grader's objects",
     re.compile(r"os\s*\.\s*(write|dup2?|fdopen|open)\s*\(|/proc/self|RESULT_FD|get_objects|Capture\b|"
                r"\b__main__\b")),
    ("makes classes at run time (a name that could carry data)", re.compile(r"\btype\s*\(\s*[^,()]+,\s*\(")),
    ("changes the working folder or reads the course files",
     re.compile(r"os\s*\.\s*chdir|normlab_grading|hidden_checks|gradebook")),
]


def student_cells(cells) -> list[tuple[int, str]]:
    """(index, source) of every code cell a student may write: answer cells and cells without nbgrader metadata
    (cells as nbformat nodes or plain dictionaries)."""
    out = []
    for i, cell in enumerate(cells):
        meta = cell.get("metadata", {}).get("nbgrader")
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        if cell.get("cell_type") == "code" and (not isinstance(meta, dict) or meta.get("solution")):
            out.append((i, source))
    return out


def scan_notebook(nb) -> list[str]:
    """One line per suspicious construct: 'cell 12: <what it does> (`<matched text>`)'."""
    return scan_cells(nb["cells"])


def scan_cells(cells) -> list[str]:
    found = []
    for index, source in student_cells(cells):
        for what, pattern in PATTERNS:
            m = pattern.search(source)
            if m:
                found.append(f"cell {index}: {what} (`{m.group(0).strip()}`)")
    return found


def scan_file(path: Path) -> list[str]:
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # noqa: BLE001 - an unreadable notebook is itself worth a look
        return [f"cannot be read as a notebook: {exc}"]
    return scan_notebook(nb)


def main(argv: list[str] | None = None) -> int:
    paths = [Path(p) for p in (sys.argv[1:] if argv is None else argv)]
    flagged = 0
    for path in paths:
        hits = scan_file(path)
        flagged += bool(hits)
        print(f"{path}: {'nothing suspicious' if not hits else ''}")
        for hit in hits:
            print(f"    {hit}")
    print(f"{flagged} of {len(paths)} submissions need a look")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
