"""The checks of the chapter 23 exercises, judged in the grader's own process: the public face of the grader.

For every check cell (grade id) the grader knows which calls to make in the student's sandbox and judges what
came back. The student's kernel only calls the student's functions on these inputs and hands back plain data
(numbers, shapes, type names): the references, the tolerances and the scoring never enter the sandbox, so no
patched IPython, forged output line, read stack frame or object whose `==` is always true can change a
verdict. The parts live in one module each:

- `draws`: the generator of the hidden inputs, from the course seed;
- `wire`: the plain data that crosses the sandbox's boundary (shared with the runner inside);
- `decode`: reading that data back, with the grader's messages;
- `references`: the expected values, from the definitions, never from `normlab_core`;
- `plans`: one plan per check cell (its cases, visible and hidden), in `CHECKS`;
- `judge`: the verdict of a check cell from its records;
- `data`: the public inputs, from the release's data cells.

Run as a command in the course folder, it prints the exact magnitudes that the visible check of exercise 3
holds, for the data cell as it is (paste them into that check cell after changing its seed), or with
`--check NOTEBOOK` says whether every check cell of a notebook has a plan (exit status 1 if not):

    python -m normlab_grading.hidden_checks [source/chapter23/exercises.ipynb]
    python -m normlab_grading.hidden_checks --check source/chapter23/exercises.ipynb
"""

from __future__ import annotations

import sys

from normlab_grading.data import check_ids, load_notebook, visible_data, visible_values
from normlab_grading.decode import CheckFailed
from normlab_grading.judge import Verdict, judge, plans, request
from normlab_grading.plans import CHECKS, COURSE_SEED, Case, Context, Plan, unplanned

__all__ = ["CHECKS", "COURSE_SEED", "Case", "CheckFailed", "Context", "Plan", "Verdict", "check_ids", "judge",
           "plans", "request", "require_plans", "unplanned", "visible_data", "visible_values"]


class Unplanned(ValueError):
    """A notebook has check cells that the grader has no plan for."""


def require_plans(nb: dict, where: str = "the notebook") -> None:
    """Raise Unplanned, naming the cells, unless every check cell of `nb` has a plan in plans.CHECKS."""
    missing = unplanned(check_ids(nb))
    if missing:
        raise Unplanned(f"{where} has check cells with no plan in normlab_grading/plans.py (CHECKS): "
                        f"{', '.join(missing)}; add a plan for each (its calls and how to judge them), or make "
                        "the cell an ordinary one")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--check"]:
        status = 0
        for path in argv[1:] or ["source/chapter23/exercises.ipynb"]:
            try:
                require_plans(load_notebook(path), path)
            except Unplanned as exc:
                print(exc)
                status = 1
        return status
    path = argv[0] if argv else "source/chapter23/exercises.ipynb"
    for name, values in visible_values(path).items():
        print(f"{name}: [{', '.join(f'{v:.10g}' for v in values)}]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
