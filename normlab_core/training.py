"""Training the tiny transformer: the reversal task, Adam, the warm-up + cosine schedule, and one recorded run.

`run(cfg, lr, steps, warmup, seed)` trains one model and returns a `Run` with everything the section plots: the
loss at every step, held-out loss and token accuracy, each layer's gradient norm at step 0, the largest attention
logit at every step and the residual stream's size after each layer. In JupyterLab it shows a progress bar, and
interrupting the kernel (Ctrl-C, or the stop button) ends the run early and returns what was trained so far.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._checks import check_positive_int
from .blas_threads import single_blas_thread
from .outcome import label
from .transformer import Config, evaluate, init_params, loss_and_grads

BETAS = (0.9, 0.98)       # Adam's betas, as in the 2017 transformer
ADAM_EPS = 1e-8
FLOOR = 0.1               # the cosine schedule decays to this fraction of the peak learning rate
BATCH = 32
EVAL_SEED = 2020          # the held-out sequences are the same for every run
EVAL_SIZE = 256
EVAL_EVERY = 50
MAX_STEPS = 20_000        # run() and train() refuse longer runs: at depth 12 (about 0.1 s a step on one core) that is
                          # over half an hour already; train a longer run from a script, in pieces (stop_after)
MAX_BATCH = 4096
RUN_FORMAT, RUN_VERSION = "normlab-run", 1   # Run.save's JSON: its "format" and "version" fields
GRAD_GROUPS = ("attn.wq", "attn.wk", "attn.wv", "attn.wo", "mlp.w1", "mlp.w2", "layer")


def chance_loss(cfg: Config) -> float:
    """The loss of guessing uniformly among the data tokens, ln(vocab): 2.77 for 16 tokens."""
    return math.log(cfg.vocab)


def reversal_batch(rng, batch: int, seq_len: int = 8, vocab: int = 16) -> np.ndarray:
    """(batch, 2 seq_len + 1) int64 rows `x SEP reverse(x)`: x uniform in 0..vocab-1, SEP = vocab."""
    check_positive_int(batch, "batch")
    x = rng.integers(0, vocab, size=(batch, seq_len))
    sep = np.full((batch, 1), vocab)
    return np.concatenate([x, sep, x[:, ::-1]], axis=1)


def lr_at(step: int, steps: int, peak: float, warmup: float = 0.0) -> float:
    """Learning rate at `step` (0-based) of `steps`: linear warm-up over the first `warmup` fraction of the
    steps, then cosine decay from `peak` to FLOOR * peak at the last step."""
    n_warm = round(warmup * steps)
    if step < n_warm:
        return peak * (step + 1) / n_warm
    progress = (step - n_warm) / max(1, steps - 1 - n_warm)
    return peak * (FLOOR + (1 - FLOOR) * 0.5 * (1 + math.cos(math.pi * progress)))


class Adam:
    """Adam (Kingma and Ba 2015) with bias correction and no weight decay; updates the params dict in place.

    The moments of all parameters sit in two flat vectors (as llm.c keeps them), so one step is a dozen array
    operations instead of a dozen per parameter array.
    """

    def __init__(self, params: dict, betas=BETAS, eps: float = ADAM_EPS):
        self.betas, self.eps, self.t = betas, eps, 0
        self.names = list(params)
        self.ends = np.cumsum([params[k].size for k in self.names])           # where each array ends
        size, dtype = int(self.ends[-1]), next(iter(params.values())).dtype
        self.m, self.v = np.zeros(size, dtype), np.zeros(size, dtype)

    def step(self, params: dict, grads: dict, lr: float) -> None:
        """One update of every parameter with learning rate lr."""
        b1, b2 = self.betas
        self.t += 1
        g = np.concatenate([grads[k].ravel() for k in self.names])
        self.m = b1 * self.m + (1 - b1) * g
        self.v = b2 * self.v + (1 - b2) * g * g
        m_hat = self.m / (1 - b1 ** self.t)
        v_hat = self.v / (1 - b2 ** self.t)
        update = lr * m_hat / (np.sqrt(v_hat) + self.eps)
        for k, u in zip(self.names, np.split(update, self.ends[:-1]), strict=True):
            params[k] -= u.reshape(params[k].shape)


def grad_norms(grads: dict, cfg: Config) -> np.ndarray:
    """(depth, len(GRAD_GROUPS)) Frobenius norms: each layer's weight matrices, and its whole gradient last."""
    out = np.zeros((cfg.depth, len(GRAD_GROUPS)))
    for i in range(cfg.depth):
        pre = f"layer{i}."
        for j, name in enumerate(GRAD_GROUPS[:-1]):
            out[i, j] = np.linalg.norm(grads[pre + name])
        out[i, -1] = math.sqrt(sum(float(np.sum(g * g)) for k, g in grads.items() if k.startswith(pre)))
    return out


@dataclass
class Run:
    """One training run: its settings and what was recorded (per step, and at each held-out evaluation)."""

    cfg: Config
    lr: float
    steps: int
    warmup: float
    seed: int
    loss: np.ndarray = field(default_factory=lambda: np.zeros(0))        # (steps done,) training loss
    lrs: np.ndarray = field(default_factory=lambda: np.zeros(0))         # (steps done,) learning rate used
    max_logit: np.ndarray = field(default_factory=lambda: np.zeros(0))   # (steps done,) largest attention logit
    grad_norm: np.ndarray = field(default_factory=lambda: np.zeros(0))   # (steps done,) norm of the whole gradient
    grad_norms_at_init: np.ndarray = field(default_factory=lambda: np.zeros((0, len(GRAD_GROUPS))))
    eval_steps: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))  # (n,) steps trained
    eval_loss: np.ndarray = field(default_factory=lambda: np.zeros(0))   # (n,) held-out loss
    eval_accuracy: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (n,) held-out token accuracy
    resid_rms: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (n, depth) RMS after each layer
    resid_max: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (n, depth) largest |value|
    diverged: bool = False
    interrupted: bool = False
    seconds: float = 0.0

    @property
    def accuracy(self) -> float:
        """Held-out token accuracy at the end of the run (NaN before the first evaluation)."""
        return float(self.eval_accuracy[-1]) if len(self.eval_accuracy) else math.nan

    @property
    def final_loss(self) -> float:
        """Held-out loss at the end of the run."""
        return float(self.eval_loss[-1]) if len(self.eval_loss) else math.nan

    @property
    def outcome(self) -> str:
        """"solved", "learning", "stuck" or "diverged": the rule of normlab_core.outcome applied to the held-out
        accuracy trajectory."""
        return label(self.eval_steps, self.eval_accuracy, self.diverged or not math.isfinite(self.final_loss))

    def save(self, path) -> Path:
        """Write the run to `path` as JSON: {"format": "normlab-run", "version": 1, the settings, the Config's
        fields and every recorded array}. Floats are written exactly (float64 repr); NaN and infinities, which
        JSON lacks, as the strings "NaN", "Infinity" and "-Infinity". Returns the path."""
        path = Path(path)
        record = {"format": RUN_FORMAT, "version": RUN_VERSION, "config": dataclasses.asdict(self.cfg)}
        for f in dataclasses.fields(self):
            if f.name != "cfg":
                value = getattr(self, f.name)
                record[f.name] = _to_json(value.tolist() if isinstance(value, np.ndarray) else value)
        path.write_text(json.dumps(record, allow_nan=False) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path) -> Run:
        """The Run that save() wrote to `path` (a ValueError names the file if it is not such a run, or is of a
        later version)."""
        path = Path(path)
        try:
            record = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} is not a saved run (not JSON: {err})") from None
        if not isinstance(record, dict) or record.get("format") != RUN_FORMAT:
            raise ValueError(f"{path} is not a saved run (no \"format\": \"{RUN_FORMAT}\" field)")
        if record.get("version") != RUN_VERSION:
            raise ValueError(f"{path} is a saved run of version {record.get('version')!r}; this normlab reads "
                             f"version {RUN_VERSION}")
        kwargs = {"cfg": Config(**record["config"])}
        empty = cls(kwargs["cfg"], 0.0, 1, 0.0, 0)          # the arrays' dtypes and, when empty, their shapes
        for f in dataclasses.fields(cls):
            if f.name == "cfg" or f.name not in record:
                continue
            value, default = _from_json(record[f.name]), getattr(empty, f.name)
            if isinstance(default, np.ndarray):
                value = np.array(value, dtype=default.dtype)
                if value.size == 0:
                    value = value.reshape((0, *default.shape[1:]))
            kwargs[f.name] = value
        return cls(**kwargs)


_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _to_json(v):
    """Lists, numbers and flags for JSON, non-finite floats as the strings of _SPECIAL."""
    if isinstance(v, list):
        return [_to_json(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else "Infinity" if v > 0 else "-Infinity"
    return v


def _from_json(v):
    if isinstance(v, list):
        return [_from_json(x) for x in v]
    return _SPECIAL.get(v, v) if isinstance(v, str) else v


def held_out(cfg: Config, size: int = EVAL_SIZE) -> np.ndarray:
    """The fixed held-out sequences every run is evaluated on."""
    return reversal_batch(np.random.default_rng(EVAL_SEED), size, cfg.seq_len, cfg.vocab)


def check_run_arguments(cfg, lr, steps, warmup, seed, batch=BATCH, eval_every=EVAL_EVERY) -> None:
    """Raise a TypeError or ValueError naming the first argument of a training run that is not allowed, what it got
    and what is allowed; nothing is trained or shown before these checks pass."""
    if not isinstance(cfg, Config):
        raise TypeError(f"cfg must be a transformer.Config, got {type(cfg).__name__} {cfg!r}")
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not (math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    check_positive_int(steps, "steps")
    if steps > MAX_STEPS:
        raise ValueError(f"steps must be at most {MAX_STEPS} (about half an hour or more at depth 12 on one core), "
                         f"got {steps}")
    if isinstance(warmup, bool) or not isinstance(warmup, (int, float)) or not 0 <= warmup < 1:
        raise ValueError(f"warmup is a fraction of the steps in [0, 1), got {warmup!r}")
    check_positive_int(seed, "seed", lo=0)
    check_positive_int(batch, "batch")
    if batch > MAX_BATCH:
        raise ValueError(f"batch must be at most {MAX_BATCH} sequences, got {batch}")
    check_positive_int(eval_every, "eval_every")


@single_blas_thread
def run(cfg: Config, lr: float, steps: int = 500, warmup: float = 0.0, seed: int = 0, *, batch: int = BATCH,
        eval_every: int = EVAL_EVERY, dtype=np.float32, stop_after: int | None = None, progress=None,
        callback=None) -> Run:
    """Train a fresh model (init and batches from `seed`) with Adam; returns the recorded Run.

    `warmup` is a fraction of the steps. `stop_after` trains only that many steps of the same schedule (a
    preview of the first part of a run). `progress` shows a bar (default: only in a Jupyter kernel);
    `callback(run)` is called after each evaluation with the Run so far. An interrupt (Ctrl-C) ends training
    early and the Run keeps what was trained (`interrupted` is then True). numpy's BLAS uses one thread meanwhile
    (the matrices are too small to gain from more; normlab_core.blas_threads).
    """
    check_run_arguments(cfg, lr, steps, warmup, seed, batch, eval_every)
    stop = steps if stop_after is None else min(steps, check_positive_int(stop_after, "stop_after"))
    params = init_params(cfg, seed, dtype)
    opt = Adam(params)
    data_rng = np.random.default_rng([seed, 1])
    test_tokens = held_out(cfg)
    rec = _Recorder(Run(cfg, float(lr), steps, float(warmup), seed))
    bar = _progress_bar(stop, progress)
    start = time.perf_counter()
    step = 0
    try:
        rec.evaluate(params, test_tokens, 0)
        for step in range(stop):
            stats = {}
            loss, grads = loss_and_grads(params, cfg, reversal_batch(data_rng, batch, cfg.seq_len, cfg.vocab), stats)
            if step == 0:
                rec.run.grad_norms_at_init = grad_norms(grads, cfg)
            total = math.sqrt(sum(float(np.vdot(g, g)) for g in grads.values()))
            if not (math.isfinite(loss) and math.isfinite(total)):
                rec.run.diverged = True
                break
            rate = lr_at(step, steps, lr, warmup)
            opt.step(params, grads, rate)
            rec.step(loss, rate, stats["max_logit"], total)
            if (step + 1) % eval_every == 0 or step + 1 == stop:
                rec.evaluate(params, test_tokens, step + 1)
                if callback is not None:
                    callback(rec.finish(time.perf_counter() - start))
            bar.update(step + 1, loss)
    except KeyboardInterrupt:
        rec.run.interrupted = True
    except (ValueError, FloatingPointError):  # a norm met a NaN or inf: the run has blown up
        rec.run.diverged = True
    done = len(rec.loss)
    if done and rec.eval_steps[-1] != done:
        try:
            rec.evaluate(params, test_tokens, done)
        except (ValueError, FloatingPointError):
            rec.run.diverged = True
    result = rec.finish(time.perf_counter() - start)
    bar.close(result)
    return result


class _Recorder:
    """Collects a run's measurements in lists and hands out a Run of arrays."""

    def __init__(self, run: Run):
        self.run = run
        self.loss, self.lrs, self.max_logit, self.grad_norm = [], [], [], []
        self.eval_steps, self.eval_loss, self.eval_accuracy, self.resid_rms, self.resid_max = [], [], [], [], []

    def step(self, loss, lr, max_logit, grad_norm):
        self.loss.append(loss)
        self.lrs.append(lr)
        self.max_logit.append(max_logit)
        self.grad_norm.append(grad_norm)

    def evaluate(self, params, tokens, step):
        stats = {}
        with np.errstate(all="ignore"):
            loss, accuracy = evaluate(params, self.run.cfg, tokens, stats)
        self.eval_steps.append(step)
        self.eval_loss.append(loss)
        self.eval_accuracy.append(accuracy)
        self.resid_rms.append(stats["resid_rms"])
        self.resid_max.append(stats["resid_max"])

    def finish(self, seconds: float) -> Run:
        r = self.run
        r.loss, r.lrs = np.array(self.loss), np.array(self.lrs)
        r.max_logit, r.grad_norm = np.array(self.max_logit), np.array(self.grad_norm)
        r.eval_steps, r.eval_loss = np.array(self.eval_steps, dtype=int), np.array(self.eval_loss)
        r.eval_accuracy = np.array(self.eval_accuracy)
        r.resid_rms = np.array(self.resid_rms).reshape(-1, r.cfg.depth)
        r.resid_max = np.array(self.resid_max).reshape(-1, r.cfg.depth)
        r.seconds = seconds
        return r


# -- the progress bar (a widget in a Jupyter kernel, nothing elsewhere) ---------------------------------------------

def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


class _NoBar:
    def update(self, step, loss):
        pass

    def close(self, run):
        pass


class _WidgetBar:
    """An ipywidgets progress bar with the step and the latest loss, redrawn about 100 times per run."""

    def __init__(self, steps: int):
        import ipywidgets as w
        from IPython.display import display

        self.steps, self.every = steps, max(1, steps // 100)
        self.bar = w.IntProgress(value=0, min=0, max=steps, description="training")
        self.text = w.HTML("")
        display(w.HBox([self.bar, self.text]))

    def update(self, step, loss):
        if step % self.every == 0 or step == self.steps:
            self.bar.value = step
            self.text.value = f"step {step} / {self.steps}, loss {loss:.3f}"

    def close(self, run):
        done = len(run.loss)
        self.bar.value = done
        if run.interrupted:
            self.bar.bar_style = "warning"
            self.text.value = f"interrupted after {done} steps: the run keeps what was trained"
        elif run.diverged:
            self.bar.bar_style = "danger"
            self.text.value = f"diverged at step {done}: the loss or a gradient was not finite"
        else:
            self.bar.bar_style = "success"


def _progress_bar(steps: int, progress):
    show = _in_kernel() if progress is None else bool(progress)
    if not show:
        return _NoBar()
    try:
        return _WidgetBar(steps)
    except ImportError:
        return _NoBar()


@single_blas_thread
def output_change(cfg: Config, lr: float, seed: int = 0, *, batch: int = BATCH, dtype=np.float64) -> float:
    """RMS change of the held-out logits after one Adam step of size lr from the initial parameters.

    Adam's first step moves every parameter by about lr in the direction against its gradient's sign, so this is
    how far the output moves for a step of the same size at any depth (the quantity Liu et al. 2020 follow).
    """
    from .transformer import forward, split_tokens

    params = init_params(cfg, seed, dtype)
    inputs, _ = split_tokens(held_out(cfg), cfg)
    before, _ = forward(params, cfg, inputs, {})
    _, grads = loss_and_grads(params, cfg, reversal_batch(np.random.default_rng([seed, 1]), batch,
                                                          cfg.seq_len, cfg.vocab))
    Adam(params).step(params, grads, lr)
    after, _ = forward(params, cfg, inputs, {})
    return float(np.sqrt(np.mean((after - before) ** 2)))
