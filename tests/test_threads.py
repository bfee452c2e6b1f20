"""numpy's BLAS runs on one thread while the library trains or draws, whatever the process started with.

A JupyterLab kernel starts with one BLAS thread per core; the tiny model's 32 x 128 products then spend their time
handing work between threads. The library limits the threads itself (threadpoolctl), around the work, and gives the
caller's limit back afterwards. Each test starts from two threads (as a kernel on this two-core machine does) and
reads, from inside the work, what threadpoolctl reports for the BLAS library.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from normlab_core import training
from normlab_core.interactive import Explorable, Slider
from normlab_core.transformer import Config

TINY = dict(depth=1, d_model=8, heads=2, d_ff=16)


def blas_threads() -> list[int]:
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


@pytest.fixture
def two_threads():
    """The process as a kernel starts it: BLAS with two threads (skipped where BLAS cannot have two)."""
    with threadpool_limits(2, user_api="blas"):
        if not blas_threads() or max(blas_threads()) < 2:
            pytest.skip("this BLAS cannot run two threads here")
        yield


def test_training_runs_on_one_blas_thread_and_gives_the_limit_back(two_threads):
    seen = []
    r = training.run(Config(**TINY), 1e-2, steps=4, eval_every=2, progress=False,
                     callback=lambda run: seen.append(blas_threads()))
    assert len(r.loss) == 4 and seen == [[1] * len(seen[0])] * 2
    assert max(blas_threads()) == 2


def test_output_change_runs_on_one_blas_thread(two_threads, monkeypatch):
    seen = []
    real = training.loss_and_grads
    monkeypatch.setattr(training, "loss_and_grads", lambda *a, **k: seen.append(blas_threads()) or real(*a, **k))
    training.output_change(Config(**TINY), 1e-3)
    assert seen and all(max(s) == 1 for s in seen) and max(blas_threads()) == 2


def test_explorables_draw_on_one_blas_thread(two_threads):
    seen = []

    def setup(fig, narrow):
        (line,) = fig.subplots().plot([0, 1], [0, 1])
        seen.append(blas_threads())
        return {"line": line}

    def update(art, *, v):
        seen.append(blas_threads())
        art["line"].set_ydata(np.array([0.0, v]) @ np.eye(2))
        return {}, "alt"

    exp = Explorable("threads", title="t", controls={"v": Slider([1, 2], 1)}, setup=setup, update=update)
    exp.render()
    exp.render(v=2)
    assert len(seen) >= 3 and all(max(s) == 1 for s in seen)
    assert max(blas_threads()) == 2


def test_the_live_trainer_draws_and_trains_on_one_blas_thread(two_threads, monkeypatch):
    from normlab_core import training_live as live

    monkeypatch.delenv("NORMLAB_STATIC", raising=False)
    monkeypatch.setattr(live, "in_kernel", lambda: True)     # the live figure is drawn in a kernel (else a text line)

    class Handle:                                             # a kernel's display handle: each update replaces it
        def update(self, obj, **kwargs):
            pass

    import IPython.display
    monkeypatch.setattr(IPython.display, "display", lambda *a, display_id=None, **k: Handle() if display_id else None)
    seen = []
    real = live.LiveLoss.draw
    monkeypatch.setattr(live.LiveLoss, "draw", lambda *a: seen.append(blas_threads()) or real(*a))
    live.train(lr=1e-2, steps=10, **TINY, placement="pre")
    assert seen and all(max(s) == 1 for s in seen) and max(blas_threads()) == 2


def test_the_limit_holds_while_another_thread_still_works(two_threads):
    """A cell trains while an explorable draws in its own thread: whichever ends first, the other keeps one
    thread, and the caller's limit comes back when both are done."""
    from normlab_core.blas_threads import one_blas_thread

    inside, release, seen = threading.Event(), threading.Event(), []

    def other():
        with one_blas_thread():
            inside.set()
            release.wait(10)
            seen.append(blas_threads())

    t = threading.Thread(target=other)
    t.start()
    inside.wait(10)
    with one_blas_thread():
        seen.append(blas_threads())
    seen.append(blas_threads())     # the other thread is still inside
    release.set()
    t.join(10)
    assert [max(s) for s in seen] == [1, 1, 1] and max(blas_threads()) == 2
