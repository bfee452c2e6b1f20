"""`train(...)`: one training run in JupyterLab, watched as it trains (beside training.py's progress bar): the
checks of every argument before anything is shown, the live loss figure, and in the static book the stored runs of
the same configuration instead (the book never trains)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ._threads import single_blas_thread
from .display import static_mode
from .figures.style import COLORS, blank_figure, figure_png, house_style
from .figures.training_runs import PLACEMENT_NAMES, loss_axes, seed_summary, stored, stored_runs_figure
from .interactive import number
from .training import BATCH, check_run_arguments


def _live_figure(color):
    fig = blank_figure()
    with house_style():
        ax = fig.subplots(1, 1)
        loss_axes(ax, "")
        (train_line,) = ax.plot([], [], color=color, lw=1.0, alpha=0.8, label="training loss")
        (eval_line,) = ax.plot([], [], "o-", color="black", ms=3.5, lw=1.0, label="held-out loss")
        ax.legend(loc="upper right")
    return fig, ax, train_line, eval_line


def _draw_run(fig, ax, train_line, eval_line, run, title):
    train_line.set_data(np.arange(len(run.loss)), run.loss)
    eval_line.set_data(run.eval_steps, run.eval_loss)
    ax.set_xlim(0, run.steps)
    ax.set_title(title, loc="left")
    png = figure_png(fig)
    # The axes, their limits and the title's two lines stay put from the first drawing on: keep that layout, so each
    # redraw is one drawing instead of constrained layout's two.
    fig.set_layout_engine("none")
    return png


@single_blas_thread
def train(cfg=None, lr: float = 3e-3, steps: int = 500, warmup: float = 0.0, seed: int = 0, *, batch: int = BATCH,
          eval_every: int | None = None, **config):
    """Train one configuration (a transformer.Config, or its fields as keywords) and draw its loss as it trains.

    In JupyterLab this shows a progress bar and the loss, redrawn at every held-out evaluation (every `eval_every`
    steps, by default 25 times per run); interrupt the kernel to stop early and keep the Run. Every argument is
    checked before anything is shown: steps at most training.MAX_STEPS, seed a whole number >= 0, keywords only
    Config's fields; `batch` sequences per step. In the static book nothing is trained: the stored runs of that
    configuration are drawn instead (if `make experiments` stored it). Returns the Run (None in the book).
    """
    from IPython.display import HTML, display

    from .training import run as train_run
    from .transformer import Config

    fields = [f.name for f in dataclasses.fields(Config)]
    if cfg is None:
        if unknown := sorted(set(config) - set(fields)):
            raise TypeError(f"train() takes no argument {', '.join(map(repr, unknown))}: it takes lr, steps, warmup, "
                            f"seed, batch and eval_every, and the model's Config fields {', '.join(fields)}")
        cfg = Config(**{"depth": 6, **config})
    elif config:
        raise TypeError("pass either a Config or its fields as keywords, not both")
    every = max(1, steps // 25) if eval_every is None and isinstance(steps, int) else eval_every
    check_run_arguments(cfg, lr, steps, warmup, seed, batch, every)   # before anything is shown or trained
    extras = [cfg.norm] + [k for k in ("qk_norm", "deepnorm") if getattr(cfg, k)]
    name = (f"{PLACEMENT_NAMES.get(cfg.placement, cfg.placement)}, depth {cfg.depth}, {', '.join(extras)}, "
            f"lr {number(lr)}, warm-up {warmup:.0%}, seed {seed}")
    if static_mode():
        _show_stored(cfg, lr, warmup, seed, name)
        return None
    import ipywidgets as w

    fig, ax, train_line, eval_line = _live_figure(COLORS.get(cfg.placement, COLORS["layer_norm"]))
    image = w.Image(format="png", layout=w.Layout(max_width="100%", height="auto"))
    display(image)

    def redraw(r):
        image.value = _draw_run(fig, ax, train_line, eval_line, r,
                                f"{name}\nstep {len(r.loss)} of {steps}, held-out accuracy {number(r.accuracy, 3)}")

    result = train_run(cfg, lr, steps, warmup, seed, batch=batch, eval_every=every, progress=True, callback=redraw)
    state = ("interrupted: kept " if result.interrupted else "diverged: " if result.diverged else "finished: ")
    image.value = _draw_run(fig, ax, train_line, eval_line, result,
                            f"{name}\n{state}{len(result.loss)} steps, {result.outcome}, "
                            f"held-out accuracy {number(result.accuracy, 3)}")
    display(HTML(f"<p>{state}{len(result.loss)} steps; outcome <b>{result.outcome}</b>, held-out token "
                 f"accuracy {number(result.accuracy, 3)}.</p>"))
    return result


def _show_stored(cfg, lr, warmup, seed, name):
    """The book's face of train(): the stored runs of this configuration, or a note that there are none."""
    from . import display

    runs = stored().select(placement=cfg.placement, depth=cfg.depth, norm=cfg.norm, qk_norm=cfg.qk_norm,
                           deepnorm=cfg.deepnorm, lr=lr, warmup=warmup)
    display.show_figure(stored_runs_figure, runs, COLORS.get(cfg.placement, COLORS["layer_norm"]), seed, name,
                        alt=(f"Training loss against step of the stored runs for {name}: " + seed_summary(runs)
                             + ", chance loss dashed."),
                        caption=f"In the book nothing trains: these are the stored runs of {name} "
                                f"({seed_summary(runs)}).")
