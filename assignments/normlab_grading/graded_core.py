"""The copy of normlab_core that a notebook gets in the sandbox: what its setup cells use, and nothing else.

The setup cell of the exercises imports `layer_norm` and `rms_norm` (exercise 3 and 2(c) use them, the
optional timing of 4(c) and the experiment of exercise 6 too). The copy holds those two, written here in a
few lines of NumPy, and no reference implementation: no backward pass, no JVP of the residual stacks, no
numerical gradient, no operation counter, no schedule. Every other module and name of the real package is
there as a stub (found by listing the real package), so `import normlab_core.backward` still works, but
calling anything in it raises `NotInGradedCopy` saying so. The one exception is `numerical_gradient`, which
the notebook's own visible check of 2(a) calls: it works while the cells run, and is a stub like the rest once
the runner starts calling the student's functions (code that goes out of its way to switch it back on has
then copied a central difference, the work of 2(b), from the copy's source). Reading the copy's files from
disk and running them gives the same stubs: the real source is not in the sandbox.

Where the copy must keep a function that an exercise asks the student to write, its behaviour differs where
that exercise's checks look: `layer_norm` and `rms_norm` take `eps=1e-5` only (the value exercises 2(c) and 3
use), while exercise 1's checks call the student's LayerNorm with other values of eps, including 0.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

EPS = 1e-5

NORMS = '''"""normlab_core.norms as graded: layer_norm and rms_norm for eps=1e-5; everything else is a stub."""

import numpy as np

from normlab_core import _absent

EPS = 1e-5


def _check(x, eps, name):
    if eps != EPS:
        raise ValueError(f"{name}: in the copy of normlab_core used when the notebook is graded, eps must be "
                         f"{EPS:g} (got {eps!r}); exercise 1 asks for your own LayerNorm")
    x = np.asarray(x)
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def layer_norm(x, gamma=None, beta=None, eps=EPS):
    """LayerNorm of x (..., D) over the last axis: gamma * (x - mean) / sqrt(var + eps) + beta."""
    x = _check(x, eps, "layer_norm")
    centred = x - x.mean(axis=-1, keepdims=True)
    y = centred / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + x.dtype.type(eps))
    y = y if gamma is None else y * np.asarray(gamma, dtype=x.dtype)
    return y if beta is None else y + np.asarray(beta, dtype=x.dtype)


def rms_norm(x, gamma=None, eps=EPS, *, sum_dtype=None):
    """RMSNorm of x (..., D) over the last axis: gamma * x / sqrt(mean(x**2) + eps)."""
    x = _check(x, eps, "rms_norm")
    y = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + x.dtype.type(eps))
    return y if gamma is None else y * np.asarray(gamma, dtype=x.dtype)


__getattr__ = _absent.stubs_for(__name__)
'''

ABSENT = '''"""Stubs for what the graded copy of normlab_core leaves out."""

CALLED = []
CELLS = [True]   # the notebook's cells are running (the runner sets it to False before the grader's calls)


class NotInGradedCopy(RuntimeError):
    """A function that the copy of normlab_core given to a graded notebook does not have."""


def stub(qualname):
    def absent(*args, **kwargs):
        CALLED.append(qualname)
        raise NotInGradedCopy(f"normlab_core.{qualname} is not in the copy of normlab_core that the notebook gets "
                              "when it is graded: this part asks for your own code")

    absent.__name__ = absent.__qualname__ = qualname.rsplit(".", 1)[-1]
    return absent


def stubs_for(module):
    prefix = module[len("normlab_core."):] + "." if module != "normlab_core" else ""

    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        return stub(prefix + name)

    return __getattr__
'''

GRADCHECK = '''"""normlab_core.gradcheck as graded: numerical_gradient while the notebook's cells run (its own visible
check of 2(a) uses it), and not during the grader's calls of the student's functions."""

import numpy as np

from normlab_core import _absent


def numerical_gradient(f, x, upstream, h=1e-5):
    """Central differences of sum(upstream * f(x)) w.r.t. x; same shape as x."""
    if not _absent.CELLS[0]:
        return _absent.stub("gradcheck.numerical_gradient")(f, x, upstream, h)
    x = np.asarray(x, dtype=np.float64)
    upstream = np.asarray(upstream, dtype=np.float64)
    grad = np.empty_like(x)
    for idx in np.ndindex(x.shape):
        x_plus, x_minus = x.copy(), x.copy()
        x_plus[idx] += h
        x_minus[idx] -= h
        grad[idx] = np.sum(upstream * (np.asarray(f(x_plus)) - np.asarray(f(x_minus)))) / (2 * h)
    return grad


__getattr__ = _absent.stubs_for(__name__)
'''

TOP = '''"""normlab_core as graded: layer_norm and rms_norm; the rest of the library is left out."""

from normlab_core import _absent
from normlab_core.gradcheck import numerical_gradient
from normlab_core.norms import layer_norm, rms_norm

__getattr__ = _absent.stubs_for(__name__)
'''

STUB = '''"""Left out of the copy of normlab_core used when the notebook is graded."""

import sys

from normlab_core import _absent

if sys.modules.get(__name__) is None or vars(sys.modules[__name__]) is not globals():   # read and run as text
    raise _absent.NotInGradedCopy("this file is a stub: the copy of normlab_core that the notebook gets when it "
                                  "is graded leaves the library's code out")
__getattr__ = _absent.stubs_for(__name__)
'''


def module_names(core: Path) -> list[str]:
    """The dotted names (below normlab_core) of every module and package of the real library, by listing."""
    names = []
    for path in sorted(core.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = path.relative_to(core).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if parts:
            names.append(".".join(parts))
    return names


def build(dest: Path, core: Path) -> Path:
    """Write the graded copy of the package at `core` into dest/normlab_core; return that folder."""
    root = dest / "normlab_core"
    root.mkdir(parents=True)
    packages = {".".join(n.split(".")[:i]) for n in module_names(core) for i in range(1, n.count(".") + 1)}
    for name in module_names(core):
        if name.startswith("_"):
            continue
        path = root.joinpath(*name.split("."))
        if name in packages or (core.joinpath(*name.split(".")) / "__init__.py").is_file():
            path.mkdir(parents=True, exist_ok=True)
            path = path / "__init__.py"
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path = path.with_suffix(".py")
        path.write_text(STUB, encoding="utf-8")
    (root / "norms").mkdir(exist_ok=True)
    (root / "norms" / "__init__.py").write_text(NORMS, encoding="utf-8")
    (root / "gradcheck.py").write_text(GRADCHECK, encoding="utf-8")
    (root / "_absent.py").write_text(ABSENT, encoding="utf-8")
    (root / "__init__.py").write_text(TOP, encoding="utf-8")
    for path in [dest, *dest.rglob("*")]:   # readable by the sandbox's unprivileged user
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


_BUILT: dict = {}


def graded_copy(core: Path) -> Path:
    """The graded copy of `core`, built once per process in a temporary folder removed at exit."""
    key = str(core)
    if key not in _BUILT or not _BUILT[key].is_dir():
        tmp = Path(tempfile.mkdtemp(prefix="normlab-graded-core-"))
        atexit.register(shutil.rmtree, tmp, True)
        _BUILT[key] = build(tmp, core)
    return _BUILT[key]
