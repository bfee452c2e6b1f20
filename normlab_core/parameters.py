"""What a notebook's `parameters` cell may hold, declared once and used three times.

Each section's declaration (SECTIONS, by notebook name) lists its parameters: numbers with a range, vectors with a
length range and a largest magnitude, choices, and keyword sets checked by the library. From that one declaration

- `str(decl)` is the help text the notebook prints under its parameters cell;
- `decl.check(namespace)` refuses a value outside it by name, before any work ("RHO must be between 0 and 0.99,
  got 2.7"), and returns the values as the notebook uses them (a vector given as a list, a tuple or a numpy array
  comes back as a list, or a tuple where the declaration says so);
- `decl.corners()` and `decl.draw(rng)` give the tests values at its edges and values drawn inside it.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import random
import textwrap

import numpy as np

STALE = ("Nothing after this cell has run, so numbers in the text below may still be those of an earlier run. "
         "Change the value in the parameters cell and run all cells again.")
STOPPED = ("(If you ran all cells, the run stopped at this error: the cells below it have not run, and numbers in the "
           "text of this page may still be those of an earlier run, since JupyterLab recomputes them only as a run "
           "reaches them. Put right what the error names and run all cells again.)")


def _say_stale(result) -> None:
    """IPython's post_run_cell hook: under a cell that failed, say that the page's numbers may be stale."""
    err = getattr(result, "error_in_exec", None)
    if err is not None and not isinstance(err, (ParameterError, KeyboardInterrupt)):
        print(STOPPED)


def say_stale_on_error() -> None:
    """From now on, a cell of this kernel that fails prints STOPPED under its error (once registered, however often
    this is called). A ParameterError says it itself; an interrupt is the learner's own stop."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and _say_stale not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _say_stale)


class ParameterError(ValueError):
    """A value of the parameters cell outside its declaration. In a notebook it shows as its message alone."""

    def _render_traceback_(self):      # IPython prints this instead of a traceback into the library
        return [f"ParameterError: {self}"]


def _fmt(v) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return f"{v:g}" if abs(v) >= 1e5 else str(int(v))
    return f"{v:g}" if isinstance(v, float) else repr(v)


def _real(value, name: str, integer: bool) -> float | int:
    kind = "a whole number" if integer else "a number"
    ok = numbers.Integral if integer else numbers.Real
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, ok):
        raise ParameterError(f"{name} must be {kind}, got {type(value).__name__} {value!r}")
    if not integer and not math.isfinite(float(value)):
        raise ParameterError(f"{name} must be a finite number, got {value!r}")
    return int(value) if integer else float(value)


@dataclasses.dataclass(frozen=True)
class Number:
    """A number (or a whole number) from lo to hi; open_lo/open_hi leave out that end."""

    name: str
    lo: float
    hi: float
    integer: bool = False
    open_lo: bool = False
    open_hi: bool = False
    why: str = ""            # said when the value is refused (what the range is for)

    def allowed(self) -> str:
        kind = "a whole number" if self.integer else "a number"
        if math.isinf(self.hi):
            return f"{kind} {'above' if self.open_lo else '>='} {_fmt(self.lo)}"
        if self.open_lo:
            return f"{kind} above {_fmt(self.lo)}, at most {_fmt(self.hi)}"
        if self.open_hi:
            return f"{kind} from {_fmt(self.lo)}, below {_fmt(self.hi)}"
        return f"{kind} from {_fmt(self.lo)} to {_fmt(self.hi)}"

    def check(self, value):
        v = _real(value, self.name, self.integer)
        below = v <= self.lo if self.open_lo else v < self.lo
        above = v >= self.hi if self.open_hi else v > self.hi
        if below or above:
            if not (self.open_lo or self.open_hi or math.isinf(self.hi)):
                text = f"{self.name} must be between {_fmt(self.lo)} and {_fmt(self.hi)}, got {_fmt(value)}"
            else:
                text = f"{self.name} must be {self.allowed()}, got {_fmt(value)}"
            raise ParameterError(text + (f" ({self.why})" if self.why else ""))
        return v

    def inside(self) -> tuple:
        """The two ends, moved just inside where they are open."""
        top = self.lo + 1000 if math.isinf(self.hi) else self.hi
        step = 1 if self.integer else (top - self.lo) * 1e-3
        return (self.lo + step if self.open_lo else self.lo, top - step if self.open_hi else top)

    def corners(self) -> list:
        return list(dict.fromkeys(self.inside()))

    def draw(self, rng: random.Random):
        lo, hi = self.inside()
        if self.integer:
            return rng.randint(int(lo), int(hi))
        return rng.choice([lo, hi, round(rng.uniform(lo, hi), 4)])


@dataclasses.dataclass(frozen=True)
class Vector:
    """Numbers (a list, a tuple or a 1-D numpy array): min_len to max_len of them, each from lo to hi."""

    name: str
    min_len: int = 2
    max_len: int = 64
    lo: float = -1e4
    hi: float = 1e4
    integer: bool = False
    as_tuple: bool = False   # the notebook uses it as a tuple (it prints it as one)

    def allowed(self) -> str:
        count = f"{self.min_len} to {self.max_len}" if self.max_len > self.min_len else f"{self.min_len}"
        kind = "whole numbers" if self.integer else "numbers"
        if self.lo == -self.hi:
            each = f"each of size at most {_fmt(self.hi)} (a constant or all-zero vector too)"
        else:
            each = f"each from {_fmt(self.lo)} to {_fmt(self.hi)}"
        return f"{count} {kind}, {each}"

    def check(self, value):
        if isinstance(value, (str, bytes, dict, set)) or not isinstance(value, (list, tuple, np.ndarray)):
            raise ParameterError(f"{self.name} must be a list, tuple or numpy array of {self.allowed()}, "
                                 f"got {type(value).__name__} {value!r}")
        if isinstance(value, np.ndarray) and value.ndim != 1:
            raise ParameterError(f"{self.name} must be one row of numbers (a 1-D array), got shape {value.shape}")
        items = [_real(v.item() if isinstance(v, np.generic) else v, f"each entry of {self.name}", self.integer)
                 for v in value]
        if not self.min_len <= len(items) <= self.max_len:
            raise ParameterError(f"{self.name} must hold {self.allowed()}; it has {len(items)}")
        bad = [v for v in items if not self.lo <= v <= self.hi]
        if bad:
            raise ParameterError(f"each entry of {self.name} must be between {_fmt(self.lo)} and {_fmt(self.hi)}, "
                                 f"got {_fmt(bad[0])}")
        return tuple(items) if self.as_tuple else items

    def _fit(self, v: list) -> list:
        return [max(self.lo, min(self.hi, x)) for x in v]

    def corners(self) -> list:
        """The shortest, the longest, a constant, zeros, the largest and the smallest magnitudes (and, for whole
        numbers, the ends)."""
        if self.integer:
            lo, hi = int(self.lo), int(min(self.hi, self.lo + 10_000))
            span = list(range(lo, hi + 1))
            longest = [span[round(i * (len(span) - 1) / max(1, self.max_len - 1))] for i in range(self.max_len)]
            return [[lo] * self.min_len, longest, [hi] * self.min_len]
        n, big = self.max_len, min(self.hi, -self.lo)
        return [self._fit([1.5, -0.5, 2.0, 0.25][: self.min_len] + [0.5] * max(0, self.min_len - 4)),
                self._fit([float((7 * i) % 13 - 6) for i in range(n)]),
                [self._fit([3.0])[0]] * self.min_len if self.min_len else [],
                [0.0] * max(self.min_len, 3) if self.max_len >= 3 else [0.0] * self.min_len,
                self._fit([big, -big, big * (1 - 1e-6), 1.0][: max(self.min_len, min(4, n))]),
                self._fit([1.5e-300, -5e-301, 2e-300, 2.5e-301][: max(self.min_len, min(4, n))])]   # squares: 0

    def draw(self, rng: random.Random, n: int | None = None) -> list:
        n = n if n is not None else rng.randint(self.min_len, min(self.max_len, 12))
        if self.integer:
            return sorted(rng.randint(int(self.lo), int(min(self.hi, self.lo + 1000))) for _ in range(n))
        kind = rng.choice(["random", "random", "offset", "constant", "zeros", "huge", "tiny"])
        if kind == "constant":
            return self._fit([round(rng.uniform(-10, 10), 3)] * n)
        if kind == "zeros":
            return [0.0] * n
        scale, base = 10 ** rng.uniform(-3, 3), rng.uniform(-100, 100) if kind == "offset" else 0.0
        v = self._fit([float(f"{base + scale * rng.gauss(0, 1):.6g}") for _ in range(n)])
        if kind == "huge":
            v[rng.randrange(n)] = self._fit([1e4])[0]
        if kind == "tiny":                    # squares underflow to 0 in float64
            v = self._fit([x * 1e-300 for x in v])
        return v


@dataclasses.dataclass(frozen=True)
class Choice:
    """One of a fixed list of values."""

    name: str
    options: tuple

    def allowed(self) -> str:
        return "one of " + ", ".join(map(repr, self.options))

    def check(self, value):
        if value not in self.options:
            raise ParameterError(f"{self.name} must be {self.allowed()}, got {value!r}")
        return value

    def corners(self) -> list:
        return list(dict.fromkeys([self.options[0], self.options[-1]]))

    def draw(self, rng: random.Random):
        return rng.choice(self.options)


@dataclasses.dataclass(frozen=True)
class Keywords:
    """A dict of keyword arguments, checked by a library function (`checker(dict)` raises on a bad one)."""

    name: str
    text: str
    checker: object
    examples: tuple          # dicts inside the declaration: its corners

    def allowed(self) -> str:
        return self.text

    def check(self, value):
        if not isinstance(value, dict):
            raise ParameterError(f"{self.name} must be a dict of keyword arguments ({self.text}), "
                                 f"got {type(value).__name__} {value!r}")
        try:
            self.checker(value)
        except (TypeError, ValueError) as err:
            raise ParameterError(f"{self.name}: {err}") from None
        return dict(value)

    def corners(self) -> list:
        return [dict(e) for e in self.examples]

    def draw(self, rng: random.Random):
        return dict(rng.choice(self.examples))


@dataclasses.dataclass(frozen=True)
class Parameters:
    """One notebook's parameters cell: its parameters, and the groups of vectors that must be of one length."""

    params: tuple
    same_length: tuple = ()      # tuples of names
    at_most: tuple = ()          # (names, limit): the product of those whole numbers is at most limit (memory)

    def __getitem__(self, name: str):
        return next(p for p in self.params if p.name == name)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def __str__(self) -> str:
        width = max(map(len, self.names))
        lines = ["What each parameter may be (a value outside this is refused here, by name):"]
        lines += [textwrap.fill(p.allowed(), 100, initial_indent=f"  {p.name:{width}}  ",
                                subsequent_indent=" " * (width + 4)) for p in self.params]
        lines += [f"  {' and '.join(group)} must have the same length" for group in self.same_length]
        lines += [f"  {' * '.join(names)} must be at most {limit:,}" for names, limit in self.at_most]
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):      # the help text, as the check cell's output
        p.text(str(self))

    def check(self, namespace: dict) -> dict:
        """The declared values of `namespace`, checked and as the notebook uses them; a ParameterError names the
        first value outside the declaration. A later cell that fails says that the page's numbers may be stale."""
        say_stale_on_error()
        missing = [n for n in self.names if n not in namespace]
        if missing:
            raise ParameterError(f"the parameters cell must define {', '.join(missing)}. {STALE}")
        values = {}
        try:
            for p in self.params:
                values[p.name] = p.check(namespace[p.name])
            for group in self.same_length:
                lengths = {n: len(values[n]) for n in group}
                if len(set(lengths.values())) > 1:
                    said = ", ".join(f"{n} has {k}" for n, k in lengths.items())
                    raise ParameterError(f"{' and '.join(group)} must have the same number of entries: {said}")
            for names, limit in self.at_most:
                if (product := math.prod(values[n] for n in names)) > limit:
                    raise ParameterError(f"{' * '.join(names)} must be at most {limit:,} (the arrays "
                                         f"they size must fit in memory), got {product:,}")
        except ParameterError as err:
            raise ParameterError(f"{err}. {STALE}") from None
        return values

    def _fit_lengths(self, values: dict) -> dict:
        """Values made to satisfy the groups: a vector of a group takes its first one's length (repeated or cut), and
        an at_most product too large is brought under its limit by halving its largest factor."""
        for first, *others in self.same_length:
            n = len(values[first])
            for name in others:
                v = list(values[name])
                values[name] = (v * (n // max(1, len(v)) + 1))[:n] if v else [0.0] * n
        for names, limit in self.at_most:
            while math.prod(values[n] for n in names) > limit:
                top = max(names, key=lambda n: values[n] / max(1, self[n].lo))
                values[top] = max(int(self[top].lo), values[top] // 2)
        return values

    def corners(self) -> list[dict]:
        """Sets of values that between them put every parameter at each of its corners, as few sets as the parameter
        with the most corners needs. Each corner but a parameter's first (its cheapest: the lower end, the shortest
        vector) is in one set only, and parameter j's are in sets j+1, j+2, ...: the costly ends of different
        parameters (a long sequence, many steps) fall in different sets."""
        lists = [p.corners() for p in self.params]
        runs = max(map(len, lists))

        def pick(i, j, c):
            k = (i - j) % runs
            return c[k] if k < len(c) else c[0]

        pairs = list(enumerate(zip(self.params, lists, strict=True)))
        return [self._fit_lengths({p.name: pick(i, j, c) for j, (p, c) in pairs}) for i in range(runs)]

    def draw(self, rng: random.Random) -> dict:
        """One set of values drawn inside the declaration."""
        values = {p.name: p.draw(rng) for p in self.params}
        return self._fit_lengths(values)


# -- the sections' declarations ----------------------------------------------------------------------------------
def _check_config(kw: dict) -> None:
    from .transformer import Config

    limits = dict(depth=1, d_model=8, heads=2, d_ff=12, vocab=5, seq_len=3)   # the check's cost grows fast
    if unknown := sorted(set(kw) - set(limits)):
        raise TypeError(f"takes only {', '.join(limits)}; got {', '.join(unknown)}")
    for key, value in kw.items():
        n = _real(value, key, integer=True)
        if not 1 <= n <= limits[key]:
            raise ValueError(f"{key} must be from 1 to {limits[key]} (a model small enough to check), got {value!r}")
    Config(**kw)


def _check_train(kw: dict) -> None:
    from . import training
    from .transformer import Config

    run_keys = ("lr", "steps", "warmup", "seed", "batch", "eval_every")
    fields = {f.name for f in dataclasses.fields(Config)}
    if unknown := sorted(set(kw) - fields - set(run_keys)):
        raise TypeError(f"train() takes no argument {', '.join(map(repr, unknown))}")
    cfg = Config(**{"depth": 6, **{k: v for k, v in kw.items() if k in fields}})
    run = {"lr": 3e-3, "steps": 500, "warmup": 0.0, "seed": 0, **{k: v for k, v in kw.items() if k in run_keys}}
    steps = run["steps"]
    every = run.get("eval_every") or (max(1, steps // 25) if isinstance(steps, int) else steps)
    training.check_run_arguments(cfg, run["lr"], steps, run["warmup"], run["seed"], run.get("batch", training.BATCH),
                                 every)


EPS = Number("EPS", 0.0, 1.0)
OFFSET = Number("OFFSET", -1000.0, 1000.0)
STACK_DEPTHS = Vector("DEPTHS", 1, 8, 1, 64, integer=True, as_tuple=True)

SECTIONS = {
    "01_what_you_will_learn": Parameters((
        Vector("X0"), Number("DEPTH", 1, 64, integer=True), Vector("GAINS", 1, 6, 0.0, 2.0, as_tuple=True),
        Number("MAX_DEPTH", 1, 96, integer=True))),
    "02_the_problem": Parameters((
        Number("GAIN_UP", 1.0, 1.5, open_lo=True, why="a gain above 1 makes the signal grow; at 1 or below it "
               "never grows ten-fold, and a gain below 1 goes in GAIN_DOWN"),
        Number("GAIN_DOWN", 0.5, 1.0, open_hi=True, why="a gain below 1 makes the signal shrink; at 1 or above it "
               "never shrinks to a tenth, and a gain above 1 goes in GAIN_UP"),
        Number("DEPTH", 1, 96, integer=True), Number("DEEP_DEPTH", 1, 192, integer=True), Vector("X0"),
        Number("BATCH", 1, 64, integer=True), Vector("BATCH_SIZES", 1, 7, 1, 64, integer=True, as_tuple=True),
        Number("SEQ_LEN", 2, 1024, integer=True), Number("LONG_D", 2, 16, integer=True),
        Number("RHO", 0.0, 0.99, why="a correlation of 1 or more between neighbouring tokens is no random sequence"),
        Number("MOMENTUM", 0.0, 1.0), Number("TRAIN_STEPS", 1, 500, integer=True))),
    "03_mean_and_variance": Parameters((Vector("A"), Vector("B"))),
    "04_layer_norm": Parameters((Vector("A"), Vector("B"), EPS, Number("SEED", 0, 2**32 - 1, integer=True))),
    "05_rms_norm": Parameters((Vector("A"), EPS)),
    "06_comparing": Parameters((Vector("CENTRED", 2, 16), OFFSET, Vector("MIXED", 2, 16), Vector("A"), EPS)),
    "07_pre_post_norm": Parameters((
        Vector("X0"), EPS, Number("GAIN", 0.0, 2.0), Number("BIAS", -1.0, 1.0), Number("STEP", 1e-5, 0.1),
        STACK_DEPTHS, Number("MAX_DEPTH", 1, 512, integer=True), Number("RANDOM_WIDTH", 2, 256, integer=True),
        Number("RANDOM_DEPTH", 1, 192, integer=True), Number("RANDOM_STACKS", 1, 50, integer=True))),
    "08_backward": Parameters((
        Vector("X", 2, 32), Vector("DY", 2, 32), EPS, Number("STEP", 1e-6, 1e-2),
        Number("BATCH", 1, 1024, integer=True),
        Number("SEQ", 1, 8192, integer=True),
        Number("WIDTH", 2, 16384, integer=True, why="a LayerNorm over one feature has nothing to normalize: its "
               "mean is the feature itself, so x_hat is 0, or 0/0 with EPS = 0"),
        Number("LAYERS", 1, 1000, integer=True)),
        same_length=(("X", "DY"),), at_most=((("BATCH", "SEQ", "WIDTH"), 20_000_000),)),
    "09_key_takeaways": Parameters((
        Vector("X_SIX"), Vector("CENTRED", 2, 16), OFFSET, Vector("X_STACK"), Vector("X_GRAD"), Vector("UPSTREAM"), EPS,
        Number("STACK_EPS", 0.0, 1.0), Number("STEP", 1e-5, 1e-2), STACK_DEPTHS,
        Number("MAX_DEPTH", 1, 96, integer=True)),
        same_length=(("X_GRAD", "UPSTREAM"),)),
    "12_norms_in_16_bits": Parameters((
        Vector("A"), EPS, Number("STAT_OFFSET", 0.0, 10_000.0), Number("CONSTANT", -1000.0, 1000.0))),
    "11_does_it_train": Parameters((
        Vector("GRAD_DEPTHS", 1, 3, 1, 24, integer=True, as_tuple=True),
        Vector("GRAD_SEEDS", 1, 5, 0, 1000, integer=True, as_tuple=True),
        Choice("GRAD_MATRIX", ("attn.wq", "attn.wk", "attn.wv", "attn.wo", "mlp.w1", "mlp.w2")),
        Keywords("CHECK", "the gradient check's model, small enough to check in seconds: depth 1, d_model up to "
                 "8, heads up to 2 (dividing d_model), d_ff up to 12, vocab up to 5, seq_len up to 3", _check_config,
                 (dict(depth=1, d_model=2, heads=1, d_ff=1, vocab=2, seq_len=1),
                  dict(depth=1, d_model=8, heads=2, d_ff=12, vocab=5, seq_len=3))),
        Number("COSINE_DEPTH", 1, 48, integer=True),
        Number("CHECK_BATCH", 1, 8, integer=True),
        Keywords("LIVE", "any train() arguments: lr, steps (to 20000), warmup, seed, batch, eval_every and "
                 "Config's fields (depth, placement, norm, eps, ...)", _check_train,
                 (dict(depth=1, placement="pre", lr=0.01, steps=1, seed=0),
                  dict(depth=3, placement="post", lr=0.001, warmup=0.5, steps=20, seed=7, eps=0.0))))),
}
