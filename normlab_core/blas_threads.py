"""One BLAS thread for the library's own work (training, and drawing figures and explorables).

The matrices here are tiny (a training step multiplies 32 x 128 blocks). When numpy's BLAS may use every core,
each product is handed out to threads and gathered again, and the hand-offs cost more than the arithmetic: a
500-step run in a JupyterLab kernel took several times as long as the same run in `make experiments` (which starts
its workers with OMP_NUM_THREADS=1). An environment variable only works if it is set before numpy is imported, so
the library limits the threads itself, around the work, with threadpoolctl, and gives the caller's setting back
afterwards.

`one_blas_thread()` nests and may be entered from several threads at once (an explorable draws in a thread of its
own while a cell trains): the first entry sets the limit, the last exit restores what was there before.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

_LOCK = threading.Lock()
_state = {"depth": 0, "saved": None, "controller": None}


def _blas_pools() -> list:
    """threadpoolctl's controllers of the loaded BLAS libraries, found once (searching the loaded libraries takes
    about a millisecond in a kernel; setting a limit on a known pool takes microseconds)."""
    if _state["controller"] is None:
        from threadpoolctl import ThreadpoolController

        _state["controller"] = ThreadpoolController().select(user_api="blas")
    return list(_state["controller"].lib_controllers)


def _set_threads(pool, n: int) -> None:
    """Set one pool's thread count from whichever thread we are on. threadpoolctl lets only one thread (the first
    that limited OpenBLAS) change OpenBLAS's process-wide pool and ignores the others silently; an explorable draws
    in a thread of its own, so the hold is released (threadpoolctl's documented clear_controlling_thread) around
    each change. Changes of ours are serialized by _LOCK."""
    clear = getattr(type(pool), "clear_controlling_thread", None)   # (older threadpoolctl has no such hold)
    if clear is not None:
        clear(force=True)
    pool.set_num_threads(n)
    if clear is not None:
        clear(force=True)


@contextmanager
def one_blas_thread():
    """Within the block, numpy's BLAS uses one thread (threadpoolctl's limit of 1 on the BLAS pools); the thread
    counts from before are set back when the last block, on any thread, ends."""
    with _LOCK:
        pools = _blas_pools()
        if _state["depth"] == 0:
            _state["saved"] = [(p, p.get_num_threads()) for p in pools]
        for p in pools:      # on every entry: someone may have changed the limit while another block was open
            _set_threads(p, 1)
        _state["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _state["depth"] -= 1
            if _state["depth"] == 0:
                for p, n in _state["saved"]:
                    if n is not None:
                        _set_threads(p, n)
                _state["saved"] = None


def single_blas_thread(fn):
    """Decorator: `fn` runs inside one_blas_thread()."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with one_blas_thread():
            return fn(*args, **kwargs)

    return wrapper
