"""What the book stores is true on every machine, not only on the one that made it (`make test-portable`).

A stored output is compared digit for digit (nbval), a frame byte for byte, and the stored training runs within a
stated tolerance; all three must hold whatever arithmetic kernels the reader's machine has. The parts of numpy
that vary between machines are the BLAS library (matrix products, `dot`, `np.linalg.norm`), whose kernel is chosen
for the processor when numpy loads and whose threads split the work, and numpy's own vectorised loops (exp, tanh,
...), compiled for several instruction sets and chosen the same way. Both can be forced to another choice by
environment variables, so each check below runs in a fresh process under:

- OpenBLAS's oldest x86-64 kernel (`OPENBLAS_CORETYPE=Prescott`: SSE3, no FMA, other blocking) or the machine's own;
- one or two BLAS threads;
- with the old kernel, numpy's baseline loops instead of the ones for this processor (`NPY_DISABLE_CPU_FEATURES`).

Frames are compared with one stated tolerance, for antialiasing only (MOST_PIXELS below, and why).
`make test` runs nbval in the machine's own configuration; these tests add the other combinations. They fail if a
stored output prints rounding noise (as the gradient check of "Does it train?" once did: 9.8e-10 stored, 9.5e-10
under the Prescott kernel).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from toc_support import toc_notebooks

pytestmark = pytest.mark.portable

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
NOTEBOOKS = [str(p.relative_to(ROOT)) for p in toc_notebooks()]


def other_numpy_loops() -> str:
    """The instruction-set targets numpy dispatches to on this machine, all turned off (the baseline loops stay)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return " ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f))


# (BLAS kernel, BLAS threads, numpy's loops): the machine's own kernel with 2 threads is what `make test` runs.
CONFIGS = {
    "own-kernel-1-thread": {"OPENBLAS_NUM_THREADS": "1"},
    "prescott-1-thread-baseline-numpy": {"OPENBLAS_CORETYPE": "Prescott", "OPENBLAS_NUM_THREADS": "1",
                                         "NPY_DISABLE_CPU_FEATURES": None},
    "prescott-2-threads": {"OPENBLAS_CORETYPE": "Prescott", "OPENBLAS_NUM_THREADS": "2"},
}


def environment(name: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "NPY_DISABLE_CPU_FEATURES")}
    for key, value in CONFIGS[name].items():
        env[key] = other_numpy_loops() if value is None else value
    env["MPLBACKEND"] = "Agg"
    return env


def run(args: list[str], name: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=environment(name), capture_output=True, text=True, timeout=timeout)


PROBE = """
import json, numpy, threadpoolctl
from numpy._core._multiarray_umath import __cpu_features__
blas = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"][0]
print(json.dumps({"kernel": blas.get("architecture"), "threads": blas["num_threads"],
                  "x86_v3": bool(__cpu_features__.get("X86_V3"))}))
"""


def probe(name: str) -> dict:
    out = run([PYTHON, "-c", PROBE], name, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_configurations_really_differ():
    """The variables take effect: another BLAS kernel, the thread count asked for, numpy's baseline loops."""
    own, old, old2 = (probe(n) for n in CONFIGS)
    assert own["threads"] == 1 and old["threads"] == 1 and old2["threads"] == 2
    assert old["kernel"] != own["kernel"] and old2["kernel"] == old["kernel"], (own, old)
    assert not old["x86_v3"]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_stored_notebook_outputs_hold_under(name):
    """Every notebook's stored outputs, compared by nbval as `make test` does, in this configuration."""
    out = run([PYTHON, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=short", "--nbval", "--nbval-current-env",
               "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", *NOTEBOOKS], name)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]


DIGESTS = """
import hashlib, json, sys
from pathlib import Path
sys.path.insert(0, "tests")
from explorable_support import every_state
from normlab_core.figures import catalog, get
folder = Path(sys.argv[1])
out = {}
for name in catalog():
    exp = get(name)
    for values in every_state(exp):
        f = exp.render(narrow=False, **values)
        digest = hashlib.sha256(f.png).hexdigest()
        (folder / (digest + ".png")).write_bytes(f.png)
        out[f"{name} {sorted(values.items())!r}"] = [digest, repr(f.readouts), f.alt]
print(json.dumps(out))
"""

# How far two drawings of the same numbers may differ. On a processor with AVX-512, numpy's float64 log, exp and power
# (matplotlib's log-scale transform, and gain ** depth) run vectorised loops whose results differ from the baseline
# loops in the last bit. Measured: 182 of 965 frames' PNG files differ, in gain_depth, teaser_stack_magnitude and
# backward_fd_step; 100 of them in their pixels, each in at most 3 pixels, by at most 16 of 255 in a channel. A point
# moved by 1e-16 of its value changes how much of an edge pixel a line covers, nothing a reader can see. So the
# numbers (readouts, alt text) must be identical, and a PNG may differ only in a few antialiased pixels: the bounds
# below are ten and four times what was measured.
MOST_PIXELS = 30
MOST_CHANNEL_STEP = 64


def frame_digests(name: str, folder: Path) -> dict:
    folder.mkdir()
    out = run([PYTHON, "-c", DIGESTS, str(folder)], name, timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def pixel_difference(a: Path, b: Path) -> tuple[int, int]:
    """How many pixels of two PNGs of the same size differ, and the largest difference in one channel (0-255)."""
    import numpy as np
    from PIL import Image

    x, y = (np.asarray(Image.open(p).convert("RGBA"), dtype=np.int16) for p in (a, b))
    assert x.shape == y.shape, (a, b, x.shape, y.shape)
    step = np.abs(x - y).max(axis=-1)
    return int((step > 0).sum()), int(step.max())


def test_every_frame_holds_with_another_kernel_and_numpys_baseline_loops(tmp_path):
    """Every state of every explorable (the frames the book pre-renders, wide layout at 1x; the phone layout draws the
    same numbers): the same readouts and alt text as with the machine's own kernel and loops, and the same PNG up to
    the antialiasing bound above (on a processor without AVX-512, byte for byte)."""
    own = frame_digests("own-kernel-1-thread", tmp_path / "own")
    old = frame_digests("prescott-1-thread-baseline-numpy", tmp_path / "old")
    assert own.keys() == old.keys() and len(own) > 900
    numbers = [k for k in own if own[k][1:] != old[k][1:]]
    assert not numbers, f"{len(numbers)} frames show other numbers, e.g. {numbers[:3]}"
    beyond = []
    for k in own:
        if own[k][0] != old[k][0]:
            pixels, step = pixel_difference(tmp_path / "own" / f"{own[k][0]}.png",
                                            tmp_path / "old" / f"{old[k][0]}.png")
            if pixels > MOST_PIXELS or step > MOST_CHANNEL_STEP:
                beyond.append(f"{k}: {pixels} pixels, up to {step}")
    assert not beyond, f"{len(beyond)} frames differ beyond antialiasing, e.g. {beyond[:3]}"


def test_the_stored_runs_rerun_within_their_tolerance_under_another_kernel():
    """tests/test_training.py re-runs two stored cells for 40 steps and compares them within 2e-4 relative (its
    comment gives the reasons); under the Prescott kernel and numpy's baseline loops the same bound holds."""
    out = run([PYTHON, "-m", "pytest", "-p", "no:cacheprovider", "-q", "tests/test_training.py", "-k", "fresh_rerun"],
              "prescott-1-thread-baseline-numpy")
    assert out.returncode == 0 and "2 passed" in out.stdout, out.stdout[-3000:]


def test_lengths_are_summed_in_a_fixed_order():
    """nc.length, which the book uses for the float32 lengths it prints, agrees with a plain sequential float32 sum
    (what the reference programs do at D = 4) and never calls BLAS: the same bits under any kernel."""
    import numpy as np

    import normlab_core as nc

    rng = np.random.default_rng(0)
    for d in (4, 5, 64):
        v = rng.normal(size=d).astype(np.float32)
        if d < 8:   # numpy sums fewer than 8 numbers one after another
            acc = np.float32(0)
            for x in v:
                acc = np.float32(acc + x * x)
            assert nc.length(v) == np.sqrt(acc)
        assert nc.length(v).dtype == np.float32
        assert abs(float(nc.length(v)) - float(np.linalg.norm(v.astype(np.float64)))) <= 1e-6 * np.sqrt(d)
    m = rng.normal(size=(3, 7))
    np.testing.assert_array_equal(nc.length(m, axis=0), np.sqrt((m * m).sum(axis=0)))
    assert nc.length(np.array([3, 4])) == 5.0
