"""Check yourself, the lab "Does it train?": what the stored runs of the grid show about placement and warm-up.
Every answer is read from the stored runs (normlab_core.data), never typed."""

from .. import data
from . import Choice

SECTION, NOTEBOOK = "lab", "11_does_it_train"
RUNS = data.load()
CELLS = [(c["config"]["placement"], c["config"]["depth"], c["lr"], c["warmup"]) for c in RUNS.studies["grid"]["cells"]]


def solved(placement: str, depth: int, lr: float, warmup: float) -> tuple[int, int]:
    """(seeds solved, seeds run) of one cell of the stored runs."""
    runs = RUNS.select(placement=placement, depth=depth, lr=lr, warmup=warmup)
    return sum(r["outcome"] == "solved" for r in runs), len(runs)


def every_seed(placement: str) -> bool:
    """True when `placement` solved every cell of the grid with every seed."""
    cells = [c for c in CELLS if c[0] == placement]
    return bool(cells) and all(s == n for s, n in (solved(*c) for c in cells))


def verdict(count: tuple[int, int]) -> int:
    """0: every seed solved, 1: none did, 2: some did."""
    s, n = count
    return 0 if s == n else 1 if s == 0 else 2


WHO = ["Pre-norm only", "Post-norm only", "Both", "Neither"]
PRE, POST = every_seed("pre"), every_seed("post")
D6 = (solved("post", 6, 0.01, 0.0), solved("post", 6, 0.01, 0.15))
D24 = solved("post", 24, 0.001, 0.15)
OUTCOMES = ("Every seed solves the task.", "No seed solves it.", "Some seeds solve it, some do not.")

QUESTIONS = [
    Choice(
        "lab-every-cell",
        "In the grid (depths 2 to 24, three learning rates, with and without warm-up), which placement solved "
        "every cell with every seed?",
        options=tuple(WHO),
        answer=WHO.index("Pre-norm only" if PRE and not POST else "Post-norm only" if POST and not PRE
                         else "Both" if PRE else "Neither"),
        explain="Pre-norm trained everywhere. Post-norm solved everything at depth 2 and got stuck more and more "
                "often from depth 6 on, the higher the learning rate the sooner.",
        why=("", "Post-norm gets stuck in the deeper cells.", "Post-norm gets stuck in the deeper cells.",
             "Pre-norm solved every cell.")),
    Choice(
        "lab-warmup-d6",
        f"Post-norm at depth 6 with learning rate 0.01 and no warm-up solved {D6[0][0]} of {D6[0][1]} seeds. "
        "Predict: the same cell with the learning rate warmed up over the first 15 % of the steps.",
        options=OUTCOMES,
        answer=verdict(D6[1]),
        explain=f"With warm-up it solved {D6[1][0]} of {D6[1][1]}. Where the trouble is the first steps at a high "
                "learning rate, warming up rescues post-norm.",
        then="set the warm-up control of the grid explorable and look at depth 6."),
    Choice(
        "lab-warmup-d24",
        "Predict: post-norm at depth 24 with the grid's smallest learning rate, 0.001, and a 15 % warm-up.",
        options=OUTCOMES,
        answer=verdict(D24),
        explain=f"It solved {D24[0]} of {D24[1]}. Warm-up is not a cure at every depth: at 24 layers even the "
                "gentlest cell of the grid stays stuck within 500 steps, where pre-norm solves them all.",
        why=("Warm-up helps with the first steps; at this depth that is not enough.", "",
             "Not one seed got there.")),
]
