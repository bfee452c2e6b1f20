"""`train(...)`: one training run in JupyterLab, watched as it trains (beside training.py's progress bar), and
`compare(...)`: runs overlaid, beside the stored seeds of their configurations. Every argument is checked before
anything is shown; the static book never trains and draws the stored runs of the same configuration instead.

The live figure is a plain image output that each held-out evaluation replaces (no widget), so a saved notebook
keeps the last drawing. Interrupting the kernel (the stop button) ends the run, keeps it as `last_run()`, and
stops a Run All there: the cells after it do not start."""

from __future__ import annotations

import base64
import dataclasses
import html
import math
import textwrap
import time
from pathlib import Path

import numpy as np
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from .blas_threads import single_blas_thread
from .display import static_mode
from .figures.style import COLORS, NARROW_IN, blank_figure, figure_png, house_style
from .figures.training_runs import (
    LOSS_LIM,
    SEED_STYLES,
    curve_steps,
    loss_axes,
    run_words,
    seed_summary,
    stored_runs_figure,
    stored_seeds,
)
from .formatting import number
from .training import BATCH, Run, check_run_arguments

WARM = dict(color=COLORS["highlight"], alpha=0.35, lw=0)     # the warm-up's shading, as in the stored runs' figure
LOG_ABOVE = 20.0     # a loss above this (a run blowing up) puts the loss axis on a log scale
_LAST: list = []     # the last Run train() made in this kernel


def last_run() -> Run | None:
    """The last Run that train() trained in this kernel, finished or interrupted (None before the first)."""
    return _LAST[-1] if _LAST else None


def _plain(v, _pos=None) -> str:
    return number(v, 3)


def fit_loss_axis(ax, *curves) -> None:
    """Loss limits that show every finite value of `curves`: the usual 0 to 4.6 while they fit, higher above, and a
    log scale (ticks written as plain numbers, never with SI prefixes) once a loss passes LOG_ABOVE."""
    values = np.concatenate([np.asarray(c, dtype=float).ravel() for c in curves] + [np.zeros(0)])
    values = values[np.isfinite(values)]
    top = float(values.max()) if values.size else 0.0
    if top > LOG_ABOVE:
        low = float(values[values > 0].min()) if (values > 0).any() else 1e-3
        ax.set_yscale("log")
        ax.set_ylim(min(low, 1.0) / 1.5, top * 2.0)
        ax.yaxis.set_major_formatter(FuncFormatter(_plain))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, p: ""))
    else:
        ax.set_yscale("linear")
        ax.set_ylim(LOSS_LIM[0], max(LOSS_LIM[1], 1.1 * top))
        ax.yaxis.set_major_formatter(FuncFormatter(_plain))


class LiveLoss:
    """The live figure of one run: training loss (a line) and held-out loss (dots on a line), the warm-up shaded,
    drawn empty at once and redrawn with `draw(run, status)`."""

    def __init__(self, cfg, lr, steps, warmup, seed, color):
        self.steps, self.name = steps, run_words(cfg, lr, warmup, seed)
        self.fig = blank_figure()
        with house_style():
            self.ax = ax = self.fig.subplots(1, 1)
            loss_axes(ax, "", n_steps=steps)
            handles = []
            if warmup:
                handles.append(Patch(**WARM, label=f"warm-up ({round(warmup * steps)} steps)"))
                ax.axvspan(0, round(warmup * steps), **WARM, zorder=0)
            # the held-out loss as dots only: a line of its own would cover the training loss where they agree
            (self.train_line,) = ax.plot([], [], color=color, lw=1.6, zorder=2, label="training loss")
            (self.eval_line,) = ax.plot([], [], "o", color="black", ms=4.0, mfc="white", mew=1.0, zorder=3,
                                        label="held-out loss")
            ax.legend(handles=[self.train_line, self.eval_line, *handles], loc="upper right")
            fit_loss_axis(ax)

    def draw(self, run: Run | None, status: str) -> bytes:
        """The figure as PNG after `run` (None: before the first step), titled with the run in words and `status`."""
        loss = np.zeros(0) if run is None else np.asarray(run.loss, dtype=float)
        ev_steps, ev_loss = (np.zeros(0), np.zeros(0)) if run is None else (run.eval_steps, run.eval_loss)
        self.train_line.set_data(np.arange(1, len(loss) + 1), loss)
        self.eval_line.set_data(ev_steps, ev_loss)
        fit_loss_axis(self.ax, loss, ev_loss)
        self.ax.set_title(f"{self.name}\n{status}", loc="left")
        return figure_png(self.fig)


def _clock(done: int, steps: int, seconds: float) -> str:
    """Elapsed time and an estimate of the time left, from the steps done so far (shown only while a run trains,
    never in the last drawing, so that a stored figure does not depend on the machine)."""
    left = seconds / done * (steps - done) if done else math.nan
    said = f"{seconds:.0f} s so far"
    return said + (f", about {left:.0f} s left" if math.isfinite(left) else "")


def _status(run: Run | None, steps: int, seconds: float | None = None) -> str:
    if run is None:
        return f"starting: 0 of {steps} steps"
    acc = f"held-out accuracy {number(run.accuracy, 3)}"
    if run.interrupted:
        return f"interrupted after {len(run.loss)} of {steps} steps, kept as last_run(): {run.outcome}, {acc}"
    if run.diverged:
        return f"diverged at step {len(run.loss)}: {acc}"
    if len(run.loss) == steps:
        return f"finished {steps} steps: {run.outcome}, {acc}"
    return f"step {len(run.loss)} of {steps}, {acc}" + ("" if seconds is None else
                                                        f"; {_clock(len(run.loss), steps, seconds)}")


def _config(cfg, config: dict):
    from .transformer import Config

    fields = [f.name for f in dataclasses.fields(Config)]
    if cfg is None:
        if unknown := sorted(set(config) - set(fields)):
            raise TypeError(f"train() takes no argument {', '.join(map(repr, unknown))}: it takes lr, steps, warmup, "
                            f"seed, batch and eval_every, and the model's Config fields {', '.join(fields)}")
        return Config(**{"depth": 6, **config})
    if config:
        raise TypeError("pass either a Config or its fields as keywords, not both")
    return cfg


@single_blas_thread
def train(cfg=None, lr: float = 3e-3, steps: int = 500, warmup: float = 0.0, seed: int = 0, *, batch: int = BATCH,
          eval_every: int | None = None, **config):
    """Train one configuration (a transformer.Config, or its fields as keywords) and draw its loss as it trains.

    In JupyterLab the loss is redrawn at every held-out evaluation (every `eval_every` steps, by default 25 times
    per run). Interrupt the kernel to stop early: the Run is kept as last_run() and a KeyboardInterrupt stops a Run
    All there. Every argument is checked before anything is shown: steps at most training.MAX_STEPS, seed a whole
    number >= 0, keywords only Config's fields, `batch` sequences per step (at most training.MAX_BATCH). In the
    static book nothing is trained: the stored runs of that configuration are drawn instead (if `make experiments`
    stored it). Returns the Run (None in the book).
    """
    from IPython.display import HTML, display

    from . import training

    cfg = _config(cfg, config)
    every = max(1, steps // 25) if eval_every is None and isinstance(steps, int) else eval_every
    check_run_arguments(cfg, lr, steps, warmup, seed, batch, every)   # before anything is shown or trained
    if static_mode():
        _show_stored(cfg, lr, steps, warmup, seed)
        return None
    live = LiveLoss(cfg, lr, steps, warmup, seed, COLORS.get(cfg.placement, COLORS["layer_norm"]))
    start = time.monotonic()

    def drawing(r):   # the figure, and its words where no image can be shown
        status = _status(r, steps, time.monotonic() - start)
        return {"image/png": base64.b64encode(live.draw(r, status)).decode("ascii"),
                "text/plain": f"Training loss of {live.name}: {status}"}

    if in_kernel():
        figure = display(drawing(None), raw=True, display_id=True)   # the empty axes at once

        def redraw(r):
            if figure is not None:
                figure.update(drawing(r), raw=True)
    else:   # a terminal or a script: one line of text, rewritten in place, where no image can be shown
        width = [0]

        def redraw(r, end=""):
            line = f"{live.name}: {_status(r, steps, time.monotonic() - start)}"
            print(f"\r{line:{width[0]}}", end=end, flush=True)    # padded over a longer line before it
            width[0] = len(line)

        redraw(None)
    result = training.run(cfg, lr, steps, warmup, seed, batch=batch, eval_every=every, progress=False,
                          callback=redraw)
    _LAST[:] = [result]
    if in_kernel():
        redraw(result)
    else:
        redraw(result, end="\n")
    if result.interrupted:
        raise KeyboardInterrupt(f"train() stopped after {len(result.loss)} of {steps} steps; the run is kept: "
                                "last_run() returns it. The cells after this one did not run.")
    if in_kernel():
        display(HTML(f"<p>{html.escape(_status(result, steps))}.</p>"))
    return result


def in_kernel() -> bool:
    """True in a Jupyter kernel (where an image can be shown and redrawn), False in a terminal or a script."""
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _show_stored(cfg, lr, steps, warmup, seed):
    """The book's face of train(): the stored runs of this configuration, or a note that there are none."""
    from . import display

    name = run_words(cfg, lr, warmup, seed)
    runs = stored_seeds(cfg, lr, warmup, steps)
    display.show_figure(stored_runs_figure, runs, COLORS.get(cfg.placement, COLORS["layer_norm"]), seed, name,
                        alt=(f"Training loss against step of the stored runs for {name}: " + seed_summary(runs)
                             + ", chance loss dashed."),
                        caption=f"In the book nothing trains: these are the stored runs of {name} "
                                f"({seed_summary(runs)}).")


# -- compare: runs overlaid, beside the stored seeds of their configurations ------------------------------------------
RUN_COLOURS = ["#1b6ca8", "#c2410c", "#15803d", "#7e22ce", "#a16207", "#0f766e"]
RUN_DASHES = ["-", "--", ":", "-."]     # beyond six runs the colours come round again, each time with another dash


def run_style(i: int) -> tuple[str, str]:
    """(colour, line style) of the i-th run of a comparison: distinct for len(RUN_COLOURS) * len(RUN_DASHES) runs."""
    return RUN_COLOURS[i % len(RUN_COLOURS)], RUN_DASHES[(i // len(RUN_COLOURS)) % len(RUN_DASHES)]


def _as_run(r, i: int) -> Run:
    if isinstance(r, Run):
        return r
    if isinstance(r, (str, Path)):
        return Run.load(r)
    raise TypeError(f"compare() takes Runs (from train() or Run.load) or paths of saved runs; argument {i + 1} is "
                    f"{type(r).__name__} {r!r}")


def compare_figure(runs: list, stored: bool = False, narrow: bool = False):
    """Training loss (lines) and held-out loss (dots) of `runs` overlaid, one colour each; with stored=True, the
    stored seeds of each run's configuration (thin, in the run's colour, one dash per seed)."""
    fig = blank_figure(NARROW_IN, 3.4 + 0.6 * len(runs) * (2 if stored else 1)) if narrow else blank_figure()
    curves = []
    with house_style():
        ax = fig.subplots(1, 1)
        title = "Runs compared" + (", with the stored seeds of each configuration" if stored else "")
        loss_axes(ax, textwrap.fill(title, 34) if narrow else title,
                  n_steps=max(r.steps for r in runs))
        for i, r in enumerate(runs):
            colour, dash = run_style(i)
            words = run_words(r.cfg, r.lr, r.warmup, r.seed) + ("" if len(r.loss) == r.steps else
                                                                f", stopped at {len(r.loss)}")
            ax.plot(np.arange(1, len(r.loss) + 1), r.loss, dash, color=colour, lw=1.2, alpha=0.9, zorder=3,
                    label=f"{chr(ord('A') + i)}: {words}")
            ax.plot(r.eval_steps, r.eval_loss, "o", color=colour, ms=3.5, mfc="white", zorder=4)
            curves += [r.loss, r.eval_loss]
            if stored:
                seeds = stored_seeds(r.cfg, r.lr, r.warmup, r.steps)
                for s in seeds:
                    y = np.array([math.nan if v is None else v for v in s["loss"]], dtype=float)
                    ax.plot(curve_steps()[: len(y)], y, SEED_STYLES[s["seed"] % len(SEED_STYLES)], color=colour,
                            lw=0.8, alpha=0.55, zorder=2)
                    curves.append(y)
                ax.plot([], [], "-", color=colour, lw=0.8, alpha=0.55,
                        label=f"{chr(ord('A') + i)}: stored seeds, {seed_summary(seeds)}")
        fit_loss_axis(ax, *curves)
        if narrow:   # the legend below the axes, its entries wrapped to the phone's column
            handles, labels = ax.get_legend_handles_labels()
            fig.legend(handles, [textwrap.fill(t, 44) for t in labels], loc="outside lower center", ncols=1,
                       fontsize="small")
        else:
            ax.legend(loc="upper right", fontsize="small")
    return fig


def compare(*runs, stored: bool = False):
    """Draw runs (Runs, or paths of saved runs) overlaid; stored=True adds the stored seeds of each run's
    configuration (as `make experiments` trained them). Returns None, so that the call ending a cell shows the
    figure alone; the runs are the arguments (Run.load reads a saved one)."""
    from . import display

    if not runs:
        raise TypeError("compare() needs at least one run: compare(run_a, run_b, ...)")
    if not isinstance(stored, bool):
        raise TypeError(f"stored must be True or False, got {stored!r}")
    runs = [_as_run(r, i) for i, r in enumerate(runs)]
    display.show_figure(compare_figure, runs, stored,
                        alt="Training loss against step of " + "; ".join(
                            f"run {chr(ord('A') + i)}, {run_words(r.cfg, r.lr, r.warmup, r.seed)}"
                            for i, r in enumerate(runs)) + ", chance loss dashed.")
