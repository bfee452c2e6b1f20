"""The student notebook of section 23.10, and partial assignments for instructors.

`make exercises` (no arguments) regenerates notebooks/10_exercises.ipynb. The student notebook is produced by
nbgrader itself: the course folder `assignments/` is copied to a temporary directory, `nbgrader
generate_assignment` releases it there (solutions replaced by stubs, hidden tests removed), and the released
notebook is copied into the book. Its answer and check cells are then tagged for the book and nbval only:

- `raises-exception`: myst-nb (the book build, run with -W) lets the cell raise (nbval would too); a blank
  answer raises NotImplementedError and a check cell of a blank answer fails, by design;
- `remove-output`: the book shows these cells without their (error) output;
- `nbval-skip`: nbval does not run them, so the stored notebook carries no error output.

None of these tags makes nbgrader skip a cell: `nbgrader validate` and the Validate button run every answer
and check cell. (The tag `skip-execution` would make nbgrader skip them, and is never used here.) The other
cells are executed so that the notebook carries stored outputs. Never edit notebooks/10_exercises.ipynb by
hand.

Both refuse a source notebook with a check cell that the grader has no plan for
(`normlab_grading.hidden_checks.require_plans`): such a cell could only be scored by the student's kernel.

`python scripts/make_exercises.py --only 1,2,4 --name chapter23_part1` writes a new assignment
`assignments/source/chapter23_part1/exercises.ipynb` holding only exercises 1, 2 and 4 (headings, answers,
data, checks and the matching lines of the introduction), ready for `nbgrader generate_assignment
chapter23_part1`. Exercises keep their numbers, so hidden checks and rubrics stay valid.
"""

from __future__ import annotations

import argparse
import os
import re
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
# Tags of the answer and check cells in the book's copy (see the module docstring); nbgrader ignores all three.
BOOK_TAGS = ("raises-exception", "remove-output", "nbval-skip")
# nbclient, myst-nb and nbgrader all skip cells with this tag; it is only used while storing outputs here.
SKIP = "skip-execution"
# What a course copy needs besides releases and submissions: the config, the sources and the grading helpers.
COURSE_PARTS = ("nbgrader_config.py", "normlab_grading", "source", "Makefile")
EXERCISE_HEADING = re.compile(r"^## Exercise (\d+)\b")


def require_plans(nb, where: str) -> None:
    """Stop (SystemExit naming the cells) unless every check cell of `nb` has a plan in the grader."""
    if str(COURSE) not in sys.path:
        sys.path.insert(0, str(COURSE))
    from normlab_grading import hidden_checks

    try:
        hidden_checks.require_plans(nb, where)
    except hidden_checks.Unplanned as exc:
        raise SystemExit(str(exc)) from None


def nbgrader_env() -> dict[str, str]:
    """The environment for nbgrader: it runs `alembic` by name, so the venv's bin directory leads PATH."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def copy_course(dest: Path) -> Path:
    """Copy the course configuration, grading helpers and sources (no releases, submissions or gradebook)."""
    dest.mkdir(parents=True, exist_ok=True)
    for part in COURSE_PARTS:
        src = COURSE / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        elif src.is_file():
            shutil.copy2(src, dest / part)
    return dest


def nbgrader(course_root: Path, *args: str, timeout: float = 600, check: bool = True,
             env: dict | None = None) -> subprocess.CompletedProcess:
    """Run one nbgrader command from the course root; raise with its output if it fails and check is set."""
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course_root,
        env=env or nbgrader_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def release(course_root: Path, assignment: str = ASSIGNMENT) -> Path:
    """Run nbgrader generate_assignment in course_root; return the released notebook's path."""
    nbgrader(course_root, "generate_assignment", assignment, "--force")
    return course_root / "release" / assignment / NOTEBOOK


def is_student_cell(cell) -> bool:
    """True for an answer cell or a check cell of code: the cells that raise while the answers are blank."""
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("solution") or meta.get("grade"))


def is_check_cell(cell) -> bool:
    """True for a check cell (graded, not an answer): it only checks, so the book folds it away."""
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def is_plumbing_cell(cell) -> bool:
    """True for a locked code cell that is not a check (the setup and data cells): the book hides its code."""
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("locked")) and not meta.get("grade")


# The book's copy opens with a figure from the stored runs (exercise 8's question); the release has no such cell.
TEASER_ID = "book-teaser"
TEASER = """\
# The transformer of "Does it train?" at depth 12, at initialization: each layer's gradient, in both wirings.
import numpy as np

from normlab_core import data, training
from normlab_core.display import show_figure
from normlab_core.figures.training_runs import grad_norm_figure

_column = training.GRAD_GROUPS.index("mlp.w2")
_at_init = {(p, 12): np.mean([np.array(r["grad_norms_at_init"])[:, _column]
                              for r in data.load().select(placement=p, depth=12, lr=3e-3, warmup=0.0)], axis=0)
            for p in ("post", "pre")}
show_figure(grad_norm_figure, _at_init, (12,), "mlp.w2")
"""
TEASER_CAPTION = ("Both wirings of the 12-layer transformer of *Does it train?* start with a healthy gradient "
                  "in every layer. Exercise 8 asks whether that tells you which one trains.")


def teaser_cell() -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(TEASER)
    cell.id = TEASER_ID
    cell.metadata["tags"] = ["remove-input"]
    cell.metadata["jupyter"] = {"source_hidden": True}
    cell.metadata["mystnb"] = {"figure": {"caption": TEASER_CAPTION},
                               "image": {"alt": "Gradient norm of each layer's second MLP matrix at "
                                         "initialization, post-norm and pre-norm, 12 layers"}}
    return cell


def book_version(released: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The released notebook with every answer cell and check cell tagged for the book and nbval, check cells
    folded (hide-cell, collapsed in JupyterLab), set-up and data cells with their code hidden (hide-input), and
    the opening figure after the first cell."""
    nb = nbformat.from_dict(released)
    for cell in nb.cells:
        if is_student_cell(cell):
            tags = [t for t in cell.metadata.get("tags", []) if t != SKIP]
            cell.metadata["tags"] = tags + [t for t in BOOK_TAGS if t not in tags]
            if is_check_cell(cell) and "hide-cell" not in tags:
                cell.metadata["tags"].append("hide-cell")
                cell.metadata["jupyter"] = {"source_hidden": True, "outputs_hidden": True}
        elif is_plumbing_cell(cell) and "hide-input" not in cell.metadata.get("tags", []):
            cell.metadata["tags"] = [*cell.metadata.get("tags", []), "hide-input"]
            cell.metadata["jupyter"] = {"source_hidden": True}
    if not any(c.get("id") == TEASER_ID for c in nb.cells):
        nb.cells.insert(1, teaser_cell())
    return nb


def build_unexecuted(workdir: Path) -> nbformat.NotebookNode:
    """Release the assignment in a copy of the course under workdir and return the book version."""
    released = release(copy_course(workdir / "course"))
    return book_version(nbformat.read(released, as_version=4))


def execute(nb: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    """Run every cell except the answer and check cells in a fresh python3 kernel, storing outputs."""
    for cell in nb.cells:
        if is_student_cell(cell):
            cell.metadata["tags"].append(SKIP)
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        record_timing=False,
        store_widget_state=False,
        resources={"metadata": {"path": str(cwd)}},
    )
    try:
        client.execute()
    finally:
        for cell in nb.cells:
            if is_student_cell(cell):
                cell.metadata["tags"].remove(SKIP)
    return nb


# --- a subset of the exercises ---------------------------------------------------------------------------

def exercise_of_cells(nb: nbformat.NotebookNode) -> list[int | None]:
    """For each cell, the number of the exercise it belongs to (None before the first and from the closing part)."""
    current, out = None, []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            m = EXERCISE_HEADING.match(cell.source)
            current = int(m.group(1)) if m else None
        out.append(current)
    return out


def _trim_intro(text: str, keep: set[int], numbers: list[int]) -> str:
    """The introduction with only the learning goals and table rows of the kept exercises."""
    lines, goal = [], 0
    in_goals = False
    for line in text.split("\n"):
        if line.startswith("After these exercises"):
            in_goals = True
        elif in_goals and line.startswith("- "):
            goal += 1
            if numbers[goal - 1] not in keep:
                continue
        elif in_goals and line.strip() and not line.startswith("- "):
            in_goals = False
        row = re.match(r"^\| (\d+) \|", line)
        if row and int(row.group(1)) not in keep:
            continue
        lines.append(line)
    if goal != len(numbers):
        raise ValueError(f"the introduction lists {goal} learning goals for {len(numbers)} exercises")
    return "\n".join(lines)


def subset(source: nbformat.NotebookNode, keep: set[int]) -> nbformat.NotebookNode:
    """The source notebook with only the exercises in `keep` (numbers unchanged), its intro trimmed to match."""
    owner = exercise_of_cells(source)
    numbers = sorted({n for n in owner if n is not None})
    unknown = sorted(keep - set(numbers))
    if unknown or not keep:
        raise ValueError(f"no exercise {unknown or '(none chosen)'}; the notebook has exercises {numbers}")
    nb = nbformat.from_dict(source)
    nb.cells = [c for c, n in zip(nb.cells, owner, strict=True) if n is None or n in keep]
    intro = nb.cells[0]
    intro.source = _trim_intro(intro.source, keep, numbers)
    dropped = sorted(set(numbers) - keep)
    for cell in nb.cells:
        for n in dropped:
            if re.search(rf"\bExercises? {n}\b", cell.source):
                raise ValueError(f"a kept cell still refers to exercise {n}:\n{cell.source[:200]}")
    return nb


def write_subset(only: str, name: str) -> Path:
    keep = {int(part) for part in only.replace(" ", "").split(",") if part}
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name) or name == ASSIGNMENT:
        raise ValueError(f"--name must be a new assignment name of letters, digits, _ or -, got {name!r}")
    source = nbformat.read(COURSE / "source" / ASSIGNMENT / NOTEBOOK, as_version=4)
    nb = subset(source, keep)
    require_plans(nb, f"the partial assignment {name}")
    target = COURSE / "source" / name / NOTEBOOK
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated exercise numbers for a partial assignment, e.g. 1,2,4")
    parser.add_argument("--name", help="name of the partial assignment (a new folder under assignments/source/)")
    args = parser.parse_args(argv)
    if args.only or args.name:
        if not (args.only and args.name):
            parser.error("--only and --name go together")
        target = write_subset(args.only, args.name)
        print(f"wrote {target.relative_to(ROOT)}; release it with:\n"
              f"  cd assignments && nbgrader generate_assignment {args.name}")
        return
    source = COURSE / "source" / ASSIGNMENT / NOTEBOOK
    require_plans(nbformat.read(source, as_version=4), str(source.relative_to(ROOT)))
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
