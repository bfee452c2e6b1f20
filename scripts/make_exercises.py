"""Regenerate notebooks/10_exercises.ipynb, the student version of the section 23.10 exercises.

The student notebook is produced by nbgrader itself: the course folder `assignments/` is copied to a
temporary directory, `nbgrader generate_assignment` releases it there (solutions replaced by stubs,
hidden tests removed), and the released notebook is copied into the book. Answer cells and check cells
are then tagged so that neither the book build nor nbval runs them (untouched, they raise
NotImplementedError by design), and the remaining cells are executed so the notebook carries stored
outputs.

Run it with `make exercises`. Never edit notebooks/10_exercises.ipynb by hand.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
COURSE = ROOT / "assignments"
ASSIGNMENT = "chapter23"
NOTEBOOK = "exercises.ipynb"
TARGET = ROOT / "notebooks" / "10_exercises.ipynb"
# nbval skips cells tagged nbval-skip; nbclient (used by myst-nb for the book) skips skip-execution.
SKIP_TAGS = ("nbval-skip", "skip-execution")


def nbgrader_env() -> dict[str, str]:
    """The environment for nbgrader: it runs `alembic` by name, so the venv's bin directory leads PATH."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def copy_course(dest: Path) -> Path:
    """Copy the course configuration and sources (not releases, submissions or the gradebook) to dest."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(COURSE / "nbgrader_config.py", dest / "nbgrader_config.py")
    shutil.copytree(COURSE / "source", dest / "source")
    return dest


def nbgrader(course_root: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run one nbgrader command from the course root; raise with its output if it fails."""
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course_root,
        env=nbgrader_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def release(course_root: Path) -> Path:
    """Run nbgrader generate_assignment in course_root; return the released notebook's path."""
    nbgrader(course_root, "generate_assignment", ASSIGNMENT, "--force")
    return course_root / "release" / ASSIGNMENT / NOTEBOOK


def is_student_cell(cell) -> bool:
    """True for an answer cell or a check cell of code: the cells the book must not run."""
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("solution") or meta.get("grade"))


def book_version(released: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The released notebook with every answer cell and check cell tagged so that it is not executed."""
    nb = nbformat.from_dict(released)
    for cell in nb.cells:
        if is_student_cell(cell):
            tags = list(cell.metadata.get("tags", []))
            cell.metadata["tags"] = tags + [t for t in SKIP_TAGS if t not in tags]
    return nb


def build_unexecuted(workdir: Path) -> nbformat.NotebookNode:
    """Release the assignment in a copy of the course under workdir and return the book version."""
    released = release(copy_course(workdir / "course"))
    return book_version(nbformat.read(released, as_version=4))


def execute(nb: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    """Run the cells that are not tagged skip-execution, in a fresh python3 kernel, storing outputs."""
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        record_timing=False,
        store_widget_state=False,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return nb


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="normlab-exercises-") as tmp:
        nb = build_unexecuted(Path(tmp))
    os.environ.setdefault("MPLBACKEND", "Agg")
    execute(nb, TARGET.parent)
    nbformat.validate(nb)
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, TARGET)
    print(f"wrote {TARGET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
