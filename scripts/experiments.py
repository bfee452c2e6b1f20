"""`make experiments`: train the grid and the variant studies of "Does it train?" and store them as data.

Every run is one `normlab_core.training.run`, a job of its own on Dask distributed, with a progress bar: by default
a `distributed.LocalCluster` on this machine (one single-threaded worker process per core, or --workers N), or the
running cluster whose scheduler address is given by --scheduler or the environment variable DASK_SCHEDULER (as
dask-jobqueue or dask-kubernetes provide). Each worker trains with one BLAS thread, and before a job it checks that
it runs the same code, numpy and BLAS as this tree, so the numbers are the same wherever a job ran. The result is
normlab_core/data/experiments.json.gz: the book reads it and never trains. Finished runs are also kept in
_build/experiments-cache/ (or --cache DIR) under a hash of the code and the settings, each appended as it arrives,
so an interrupted `make experiments` picks up where it stopped, and a change of the model starts afresh.

    .venv/bin/python -m scripts.experiments [--workers N] [--scheduler ADDRESS] [--only STUDY ...] [--add]
                                            [--relabel] [--list] [--out PATH] [--cache DIR]

A study may train longer than STEPS ("steps") or with other seeds than SEEDS ("seeds"). `--add` trains only the
named studies and merges them into the existing data file, keeping every other run (and the update-size study) as
it is stored.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")       # before numpy is imported: one BLAS thread per process
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import ctypes  # noqa: E402
import functools  # noqa: E402
import gzip  # noqa: E402
import hashlib  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from normlab_core import data, outcome, training  # noqa: E402
from normlab_core.blas_threads import one_blas_thread  # noqa: E402
from normlab_core.transformer import Config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "_build" / "experiments-cache"
SEEDS = (0, 1, 2)
STEPS = 500
EVAL_EVERY = 100         # held-out evaluations at steps 0, 100, ..., 500 (each costs about 4 training steps)
CURVE_EVERY = 5          # the stored curves keep every 5th step and the last one
DIGITS = 5               # significant digits kept in the file
GRID_LRS = (1e-3, 3e-3, 1e-2)
WARMUPS = (0.0, 0.15)

# Each study is a product of axes (config fields, lr, warmup), or a list of such products, with some config fields
# fixed; every cell runs SEEDS for STEPS steps unless the study names its own "seeds" or "steps".
STUDIES = {
    "grid": {
        "title": "post-norm against pre-norm (LayerNorm): depth x learning rate x warm-up",
        "axes": {"placement": ["post", "pre"], "depth": [2, 6, 12, 24], "lr": list(GRID_LRS),
                 "warmup": list(WARMUPS)},
    },
    "rms_norm": {
        "title": "the same question with RMSNorm",
        "fixed": {"norm": "rms_norm"},
        "axes": [{"placement": ["post"], "depth": [6, 12], "lr": list(GRID_LRS), "warmup": list(WARMUPS)},
                 {"placement": ["pre"], "depth": [6, 12], "lr": list(GRID_LRS), "warmup": [0.0]}],
    },
    "deepnorm": {
        "title": "DeepNorm: post-norm with the residual up-weighted and the initial weights scaled down",
        "fixed": {"placement": "post", "deepnorm": True},
        "axes": {"depth": [6, 12, 24], "lr": list(GRID_LRS), "warmup": [0.0]},
    },
    "peri": {
        "title": "Peri-LN: a norm before and after each sublayer",
        "fixed": {"placement": "peri"},
        "axes": {"depth": [6, 12, 24], "lr": [1e-3, 1e-2], "warmup": [0.0]},
    },
    "qk_norm": {
        "title": "QK-norm: queries and keys normalized before their dot product, at high learning rates",
        "axes": {"placement": ["pre", "post"], "qk_norm": [False, True], "depth": [6], "lr": [1e-2, 3e-2],
                 "warmup": [0.0]},
    },
    "dyt": {
        "title": "DyT (gamma * tanh(alpha * x) + beta) in place of LayerNorm, pre-norm",
        "fixed": {"placement": "pre", "norm": "dyt"},
        "axes": {"depth": [6, 12, 24], "lr": [1e-3, 1e-2], "warmup": [0.0]},
    },
    # Zhu et al. (2025) tune DyT's starting alpha per model and find that narrower models want a larger one; this
    # model is 32 wide. The two cells where alpha0 = 0.5 fails, at two larger starting alphas.
    "dyt_alpha": {
        "title": "DyT with a larger starting alpha (1 and 2) where 0.5 fails, pre-norm",
        "fixed": {"placement": "pre", "norm": "dyt"},
        "axes": [{"dyt_alpha": [1.0, 2.0], "depth": [12], "lr": [1e-2], "warmup": [0.0]},
                 {"dyt_alpha": [1.0, 2.0], "depth": [24], "lr": [1e-3], "warmup": [0.0]}],
    },
    # The cells the grid's labels need: a lower peak learning rate and a longer warm-up for post-norm at depth 24,
    # trained four times as long; longer warm-ups for post-norm at depth 12 and lr 0.01 (the cell a 15 % warm-up
    # does not rescue); and two more seeds for the cells whose count hinged on one run close to the cut-off.
    "long": {
        "title": "post-norm at depth 24, lr 0.0003 with a warm-up over 30 % of 2,000 steps",
        "fixed": {"placement": "post"},
        "steps": 2000,
        "axes": {"depth": [24], "lr": [3e-4], "warmup": [0.3]},
    },
    "long_more": {       # about 2 min of one core a run (118-124 s measured under load)
        "title": "post-norm at depth 24, lr 0.0001 with a warm-up over 30 % of 2,000 steps",
        "fixed": {"placement": "post"},
        "steps": 2000,
        "axes": {"depth": [24], "lr": [1e-4], "warmup": [0.3]},
    },
    "long_warmup": {
        "title": "post-norm at depth 24, lr 0.0003 with a warm-up over 50 % of 2,000 steps",
        "fixed": {"placement": "post"},
        "steps": 2000,
        "axes": {"depth": [24], "lr": [3e-4], "warmup": [0.5]},
    },
    "warmup": {
        "title": "post-norm at depth 12 and lr 0.01 with warm-ups over 30 % and 50 % of the steps",
        "fixed": {"placement": "post"},
        "axes": {"depth": [12], "lr": [1e-2], "warmup": [0.3, 0.5]},
    },
    "more_seeds": {
        "title": "two more seeds for the cells whose count hinged on one run near the cut-off",
        "seeds": [3, 4],
        "axes": [{"placement": ["post"], "depth": [12], "lr": [1e-3], "warmup": [0.0]},
                 {"placement": ["post"], "norm": ["rms_norm"], "depth": [12], "lr": [1e-3], "warmup": [0.0, 0.15]},
                 {"placement": ["pre"], "norm": ["dyt"], "depth": [12, 24], "lr": [1e-3], "warmup": [0.0]}],
    },
}

# Update amplification: the output change after one Adam step from initialization, against depth.
# Ten seeds: one step is cheap, and the comparisons between variants need the spread over initializations.
UPDATE = {
    "lr": 1e-3,
    "seeds": list(range(10)),
    "depths": [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48],
    "variants": {
        "post": {"placement": "post"},
        "pre": {"placement": "pre"},
        "peri": {"placement": "peri"},
        "deepnorm": {"placement": "post", "deepnorm": True},
    },
}

# "Watch it fail first" (section 23.2): not a transformer but normlab_core.residual_mlp, small enough to train in
# this process (a few minutes of one core), stored in a file of its own.
SMALL = {
    "fail_first": {
        "title": "a residual MLP with no norm, post-norm and pre-norm, plain gradient descent: depth x learning rate",
        "axes": {"depth": [4, 8, 16, 32], "wiring": ["none", "post", "pre"], "lr": [0.01, 0.03, 0.1]},
        "seeds": [0, 1, 2], "steps": 300, "path": data.PATH.with_name("fail_first.json.gz"),
    },
}


def run_small(name: str) -> Path:
    """Train the SMALL study `name` here, with one BLAS thread, and write its file: every run's loss per step, and
    for the first seed the quantile bands of |activation| and |gradient| per layer at the start and the end."""
    from normlab_core import residual_mlp

    study, runs = SMALL[name], []
    with one_blas_thread():
        for depth, wiring, lr in itertools.product(*study["axes"].values()):
            for seed in study["seeds"]:
                r = residual_mlp.train(depth, wiring, lr, study["steps"], seed)
                runs.append({"depth": depth, "wiring": wiring, "lr": lr, "seed": seed, "loss": rounded(r["loss"]),
                             "blown": r["blown"], "end_step": r["end_step"]})
                if seed == study["seeds"][0]:
                    runs[-1]["bands"] = {when: {k: rounded(v) for k, v in r[when].items()} for when in ("start", "end")}
    m = residual_mlp
    settings = {"steps": study["steps"], "seeds": study["seeds"], "axes": study["axes"], "quantiles": m.QUANTILES,
                "width": m.WIDTH, "hidden": m.HIDDEN, "outputs": m.OUTPUTS, "batch": m.BATCH, "probe": m.PROBE,
                "blown": m.BLOWN, "digits": DIGITS}
    _write(study["path"], {"format": f"normlab-{name}", "version": 1, "title": study["title"], "settings": settings,
                           "runs": runs})
    return study["path"]


SETTINGS = {
    "steps": STEPS, "batch": training.BATCH, "seeds": list(SEEDS), "eval_every": EVAL_EVERY,
    "eval_size": training.EVAL_SIZE, "eval_seed": training.EVAL_SEED, "dtype": "float32",
    "betas": list(training.BETAS), "adam_eps": training.ADAM_EPS, "floor": training.FLOOR,
    "solved_above": outcome.SOLVED, "chance_loss": math.log(16),
    "curve_every": CURVE_EVERY, "digits": DIGITS, "grad_groups": list(training.GRAD_GROUPS),
}
CURVE_STEPS = sorted(set(range(0, STEPS, CURVE_EVERY)) | {STEPS - 1})
SETTINGS["curve_steps"] = CURVE_STEPS
CODE = ["normlab_core/transformer.py", "normlab_core/training.py", "normlab_core/backward.py",
        "normlab_core/stats.py", "normlab_core/_checks.py", "scripts/experiments.py"] + sorted(
    f"normlab_core/norms/{p.name}" for p in (ROOT / "normlab_core" / "norms").glob("*.py"))   # every norm's module


def cells(study: dict) -> list[dict]:
    """Every cell of a study: {"config": Config fields, "lr", "warmup"}."""
    products = study["axes"] if isinstance(study["axes"], list) else [study["axes"]]
    out = []
    for axes, values in ((a, v) for a in products for v in itertools.product(*a.values())):
        cell = dict(zip(axes, values, strict=True))
        config = {**study.get("fixed", {}), **{k: v for k, v in cell.items() if k not in ("lr", "warmup")}}
        config = {k: v for k, v in config.items() if data.BASE.get(k, object()) != v}  # plain values unnamed
        out.append({"config": config, "lr": cell["lr"], "warmup": cell["warmup"]})
    return out


def study_steps(study: dict) -> int:
    return study.get("steps", STEPS)


def curve_steps(steps: int) -> list[int]:
    """The steps whose training curves are stored: every CURVE_EVERY-th and the last."""
    return sorted(set(range(0, steps, CURVE_EVERY)) | {steps - 1})


def job_key(job: dict) -> str:
    """A stable text key of a job (its kind, config, lr, warmup and seed)."""
    return json.dumps(job, sort_keys=True)


def record_key(rec: dict) -> str:
    """The key of the job a record (of the cache or the data file) is the run of, as the record shows it."""
    return job_key({k: rec[k] for k in _job_fields(rec)})


def stored_key(job: dict) -> str:
    """record_key of the record that run_job makes of `job` (a training run's record names the final_norm that
    Config resolved), so that a job finds its record in the cache."""
    if job["kind"] == "train":
        job = {**job, "config": {**job["config"], "final_norm": Config(**job["config"]).final_norm}}
    return job_key(job)


def jobs_for(names, update: bool = True) -> list[dict]:
    """The distinct training jobs of the named studies in their order, then (with `update`) the update-size jobs.
    A job names its "steps" only when they are not STEPS, so the jobs of the 500-step studies keep their keys."""
    seen, out = set(), []
    for name in names:
        steps = study_steps(STUDIES[name])
        for cell in cells(STUDIES[name]):
            for seed in STUDIES[name].get("seeds", SEEDS):
                job = {"kind": "train", **cell, "seed": seed, **({"steps": steps} if steps != STEPS else {})}
                if job_key(job) not in seen:
                    seen.add(job_key(job))
                    out.append(job)
    if not update:
        return out
    for variant, fields in UPDATE["variants"].items():
        for depth in UPDATE["depths"]:
            for seed in UPDATE.get("seeds", SEEDS):
                out.append({"kind": "update", "variant": variant, "config": {**fields, "depth": depth},
                            "lr": UPDATE["lr"], "seed": seed})
    return out


def cost(job: dict) -> float:
    """Rough cost of a job in depth-steps (for the order of work and the time estimate)."""
    depth = job["config"]["depth"]
    # an update job is one step, but in float64 and with two forward passes over the held-out set: it costs about as
    # much as 100 training steps (14 s at depth 48 on a loaded core)
    steps = job.get("steps", STEPS) if job["kind"] == "train" else 100
    return depth * steps * (1.3 if job["config"].get("placement") == "peri" else 1)


def rounded(x):
    """x (a number or nested lists of them) to DIGITS significant digits, as plain JSON numbers."""
    if isinstance(x, (list, tuple, np.ndarray)):
        return [rounded(v) for v in x]
    x = float(x)
    if not math.isfinite(x):
        return None
    return float(f"{x:.{DIGITS}g}")


def tune_allocator() -> None:
    """Let glibc keep freed memory in the process (its trim and mmap thresholds raised), so numpy's temporaries
    of a few hundred KB reuse pages instead of faulting in fresh ones at every operation. It changes no
    arithmetic (the runs are bit for bit the same) and saves about 7 % of a training step on this machine."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:          # not glibc: nothing to tune
        return
    libc.mallopt(-1, 512 << 20)     # M_TRIM_THRESHOLD: keep up to 512 MB of freed memory
    libc.mallopt(-3, 32 << 20)      # M_MMAP_THRESHOLD: blocks up to 32 MB (glibc's largest) come from the heap


def run_job(job: dict) -> dict:
    """Run one job in a worker and return its record for the data file."""
    cfg = Config(**job["config"])
    if job["kind"] == "update":
        return {**job, "change": rounded(training.output_change(cfg, job["lr"], job["seed"]))}
    steps = job.get("steps", STEPS)
    r = training.run(cfg, job["lr"], steps, job["warmup"], job["seed"], eval_every=EVAL_EVERY, progress=False)
    done = [s for s in curve_steps(steps) if s < len(r.loss)]
    return {
        **job,
        **({"curve_steps": done} if steps != STEPS else {}),
        "config": {**job["config"], "final_norm": cfg.final_norm},
        "outcome": r.outcome, "accuracy": rounded(r.accuracy), "final_loss": rounded(r.final_loss),
        "diverged": r.diverged, "steps_done": len(r.loss),
        "loss": rounded(r.loss[done]), "max_logit": rounded(r.max_logit[done]), "grad_norm": rounded(r.grad_norm[done]),
        "eval_steps": [int(s) for s in r.eval_steps], "eval_loss": rounded(r.eval_loss),
        "eval_accuracy": rounded(r.eval_accuracy), "resid_rms": rounded(r.resid_rms),
        "resid_max": rounded(r.resid_max), "grad_norms_at_init": rounded(r.grad_norms_at_init),
        "seconds": round(r.seconds, 2),
    }


def code_hash(dirs: dict | None = None) -> str:
    """A hash of the code and settings the runs depend on: cached runs of other code are not reused. `dirs` maps a
    top folder of CODE ("normlab_core", "scripts") to where its files are read (default: this tree)."""
    dirs = dirs or {}
    h = hashlib.sha256(json.dumps(SETTINGS, sort_keys=True).encode())
    for rel in CODE:
        top, name = rel.split("/", 1)
        h.update((Path(dirs[top]) / name if top in dirs else ROOT / rel).read_bytes())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def fingerprint() -> dict:
    """What a run's numbers depend on besides its job, in this process: code_hash over the files it imports
    (normlab_core's and this script's), numpy's version and its SIMD loops, and the BLAS library (version, kernels).
    Taken once a process, the first time it is asked: a worker whose files change under it keeps the code it loaded."""
    from threadpoolctl import threadpool_info

    import normlab_core

    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
        simd = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
    except ImportError:      # (another numpy layout: its version still has to match)
        simd = None
    blas = [[p.get("internal_api"), p.get("version"), p.get("architecture")]
            for p in threadpool_info() if p["user_api"] == "blas"]
    dirs = {"normlab_core": Path(normlab_core.__file__).parent, "scripts": Path(__file__).parent}
    return {"code": code_hash(dirs), "numpy": np.__version__, "simd": simd, "blas": blas}


def expected() -> dict:
    """The fingerprint every worker must have: this process's, with the code of this tree (the cache's hash)."""
    return {**fingerprint(), "code": code_hash()}


def differences(have: dict, want: dict) -> str:
    """What differs between a worker's fingerprint and the expected one, in words ("" if nothing)."""
    return ", ".join(f"{k} {have.get(k)} (expected {want[k]})" for k in want if have.get(k) != want[k])


def work(job: dict, want: dict) -> dict:
    """Run one job on a Dask worker, with one BLAS thread: first check that this worker runs the code, numpy and
    BLAS of `want` (the client's, so that its numbers are those of a local run), and raise RuntimeError if not."""
    diff = differences(fingerprint(), want)
    if diff:
        import normlab_core

        raise RuntimeError(f"the worker on {socket.gethostname()} (normlab_core from "
                           f"{Path(normlab_core.__file__).parent}) runs other code than the client: {diff}")
    tune_allocator()
    with one_blas_thread():
        return run_job(job)


@contextlib.contextmanager
def dask_client(workers: int | None = None, scheduler: str | None = None):
    """A distributed.Client and the words for its cluster: the running scheduler at `scheduler` (waiting for
    `workers` workers first if given), or else a new LocalCluster of `workers` (default: one per core)
    single-threaded worker processes on this machine, closed at the end."""
    from distributed import Client, LocalCluster

    if scheduler:
        with Client(scheduler) as client:
            if workers:
                client.wait_for_workers(workers)
            yield client, f"the Dask scheduler at {scheduler}"
        return
    n = workers or len(os.sched_getaffinity(0))
    # (no memory limit: the workers are never paused or restarted halfway through a run; the scheduler's web page,
    # if bokeh is installed, on a free port)
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit=0) as cluster, Client(cluster) as client:
        yield client, "a LocalCluster on this machine"


def run_jobs(client, todo: list[dict], cache_file: Path, cached: dict, want: dict) -> tuple[list, list]:
    """Run `todo` on the cluster of the Dask `client`, longest first; as each one finishes, advance the progress bar
    and append its record to `cache_file` (and to `cached`) at once, so an interrupted run keeps every finished
    job. Returns the failed jobs with their errors, and this machine's load averages seen meanwhile."""
    from distributed import as_completed

    bar = Bar(sum(cost(j) for j in todo), len(todo))
    futures = [client.submit(work, j, want, priority=len(todo) - i, pure=False) for i, j in enumerate(todo)]
    job_of = {f.key: j for f, j in zip(futures, todo, strict=True)}
    loads, failed = [], []
    with cache_file.open("a") as out:
        for fut in as_completed(futures):
            job = job_of.pop(fut.key)
            loads.append(os.getloadavg()[0])
            try:
                rec = fut.result()
            except Exception as err:  # one failed run must not lose the others
                failed.append((job, f"{type(err).__name__}: {err}"))
                bar.advance(cost(job), "FAILED")
                continue
            finally:
                fut.release()
            out.write(json.dumps(rec) + "\n")
            out.flush()
            cached[stored_key(job)] = rec
            c = job["config"]
            bar.advance(cost(job), f"{c.get('placement')} depth {c['depth']} lr {job['lr']:g}")
    bar.close()
    return failed, loads


def check_workers(client, want: dict) -> list[str]:
    """The cluster's workers that run other code than `want` (an error each) or more than one thread (a warning)."""
    problems = [f"error: worker {addr} runs other code than the client: {diff}"
                for addr, have in client.run(fingerprint).items() if (diff := differences(have, want))]
    many = sorted(a for a, n in client.nthreads().items() if n > 1)
    if many:
        problems.append(f"warning: {len(many)} workers have more than one thread ({', '.join(many[:3])}"
                        f"{', ...' if len(many) > 3 else ''}): start them with --nthreads 1, one job at a time each")
    return problems


class Bar:
    """A one-line text progress bar on stderr, weighted by the jobs' cost."""

    def __init__(self, total: float, n: int):
        self.total, self.n, self.done, self.count, self.start = total, n, 0.0, 0, time.time()

    def advance(self, weight: float, note: str = "") -> None:
        self.done += weight
        self.count += 1
        frac = self.done / self.total if self.total else 1.0
        spent = time.time() - self.start
        left = spent * (1 - frac) / frac if frac > 0 else float("nan")
        bar = "#" * round(30 * frac) + "." * (30 - round(30 * frac))
        sys.stderr.write(f"\r[{bar}] {self.count}/{self.n} runs  {_clock(spent)} spent, ~{_clock(left)} left  "
                         f"{note:<40.40}")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")


def _clock(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "--:--"
    m, s = divmod(int(seconds), 60)
    return f"{m}:{s:02d}"


def assemble(records: list[dict], names) -> dict:
    """The data file's content from the finished records (training runs in job order, no timings)."""
    train = [{k: v for k, v in r.items() if k not in ("kind", "seconds")} for r in records if r["kind"] == "train"]
    update = [r for r in records if r["kind"] == "update"]
    rows = {}
    for r in update:
        rows.setdefault(r["variant"], {}).setdefault(r["seed"], {})[r["config"]["depth"]] = r["change"]
    return {
        "format": data.FORMAT, "version": data.VERSION, "settings": SETTINGS,
        "studies": {n: {"title": STUDIES[n]["title"], "cells": cells(STUDIES[n]),
                        **({"steps": study_steps(STUDIES[n])} if study_steps(STUDIES[n]) != STEPS else {}),
                        **({"seeds": STUDIES[n]["seeds"]} if "seeds" in STUDIES[n] else {})} for n in names},
        "runs": train,
        "update_size": {
            "lr": UPDATE["lr"], "depths": UPDATE["depths"], "variants": UPDATE["variants"],
            "seeds": UPDATE.get("seeds", list(SEEDS)),
            "change": {v: [[by_seed[s][d] for d in UPDATE["depths"]] for s in sorted(by_seed)]
                       for v, by_seed in rows.items()},
        },
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, help="worker processes of the LocalCluster (default: one per core); "
                    "with a scheduler, the number of workers to wait for before starting")
    ap.add_argument("--scheduler", default=os.environ.get("DASK_SCHEDULER") or None, metavar="ADDRESS",
                    help="the address of a running Dask scheduler, e.g. tcp://host:8786 (default: $DASK_SCHEDULER; "
                    "if neither is set, a LocalCluster on this machine)")
    ap.add_argument("--only", nargs="*", choices=[*STUDIES, *SMALL], help="studies to run (default: all)")
    ap.add_argument("--add", action="store_true", help="train only the --only studies and merge them into the "
                    "existing data file, keeping its other runs")
    ap.add_argument("--update-size", action="store_true", help="with --add: train the update-size study too and "
                    "replace the stored one (--only may then be left out)")
    ap.add_argument("--relabel", action="store_true", help="apply the outcome rule of normlab_core.outcome to "
                    "every run of the data file and exit (nothing is trained)")
    ap.add_argument("--list", action="store_true", help="list the jobs and exit")
    ap.add_argument("--out", default=str(data.PATH), help="the data file to write")
    ap.add_argument("--cache", default=str(CACHE), help="the folder of the resumable cache of finished runs")
    args = ap.parse_args(argv)
    names = [n for n in (args.only or STUDIES) if n in STUDIES]
    small = [n for n in (args.only or SMALL) if n in SMALL]
    if args.update_size and not args.add:
        ap.error("--update-size goes with --add (a full run trains the update-size study anyway)")
    if args.add and not args.only and not args.update_size:
        ap.error("--add needs --only STUDY ... or --update-size")
    if args.add and not args.only:
        names, small = [], []
    if args.workers is not None and args.workers < 1:
        ap.error(f"--workers must be a positive number of worker processes, got {args.workers}")
    jobs = jobs_for(names, update=not args.add or args.update_size)
    if args.relabel:
        stored = data.load(args.out)
        _write(Path(args.out), relabelled({"format": data.FORMAT, "version": data.VERSION, "settings": SETTINGS,
                                           "studies": stored.studies, "runs": stored.runs,
                                           "update_size": stored.update_size}))
        print(f"relabelled {len(stored.runs)} runs of {args.out}", file=sys.stderr)
        return 0
    if args.list:
        for j in jobs:
            print(job_key(j))
        print(f"{len(jobs)} jobs")
        return 0
    for name in small:
        print(f"wrote {_shown(run_small(name))} ({name}, trained here)", file=sys.stderr)
    if args.only and not names:
        return 0
    cache_dir = Path(args.cache)
    cache_dir.mkdir(parents=True, exist_ok=True)
    cache_file = cache_dir / f"{code_hash()}.jsonl"
    cached = {}
    if cache_file.exists():
        for line in cache_file.read_text().splitlines():
            rec = json.loads(line)
            cached[record_key(rec)] = rec
    todo = sorted((j for j in jobs if stored_key(j) not in cached), key=lambda j: -cost(j))  # longest first
    head = f"{len(jobs)} jobs ({len(jobs) - len(todo)} cached in {_shown(cache_file)})"
    start, loads, failed, where = time.time(), [], [], "no cluster"
    if not todo:
        print(f"{head}, nothing to train", file=sys.stderr)
    else:
        with dask_client(args.workers, args.scheduler) as (client, where):
            want = expected()
            problems = check_workers(client, want)
            for line in problems:
                print(line, file=sys.stderr)
            if any(line.startswith("error") for line in problems):
                return 1
            where = f"{len(client.nthreads())} workers of {where}"
            print(f"{head}, on {where}, load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
            failed, loads = run_jobs(client, todo, cache_file, cached, want)
    wall = time.time() - start
    if failed:
        for job, err in failed:
            print(f"FAILED {job_key(job)}: {err}", file=sys.stderr)
        return 1
    content = assemble([cached[stored_key(j)] for j in jobs], names)
    if args.add:
        content = merged(data.load(args.out), content, names, update_size=args.update_size)
    path = Path(args.out)
    content = relabelled(content)
    _write(path, content)
    trained = [cached[stored_key(j)] for j in jobs if j["kind"] == "train"]
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB), {len(trained)} training runs; "
          f"{_clock(wall)} wall time for {len(todo)} new jobs on {where}, load average "
          f"{min(loads, default=0):.2f}..{max(loads, default=0):.2f} (median {np.median(loads or [0]):.2f})",
          file=sys.stderr)
    _summary(content)
    return 0


def _shown(path: Path) -> str:
    """`path` relative to the tree if it is in it, else as it is."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def relabelled(content: dict) -> dict:
    """`content` with every run's "outcome" given by the rule of normlab_core.outcome (its accuracy trajectory)."""
    runs = [{**r, "outcome": outcome.label(r["eval_steps"], r["eval_accuracy"], r["diverged"])}
            for r in content["runs"]]
    return {**content, "runs": runs}


def _write(path: Path, content: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(json.dumps(content, separators=(",", ":")).encode())


def merged(old: data.Experiments, new: dict, names, update_size: bool = False) -> dict:
    """The stored file's content with the studies `names` replaced by those of `new`: every other study and its
    runs are kept as stored, and so is the update-size study unless `update_size` (then `new`'s replaces it); the
    studies stay in the order of STUDIES."""
    def key(r):
        return record_key({"kind": "train", **r})
    keys = {key(r) for r in new["runs"]}
    runs = [r for r in old.runs if key(r) not in keys]
    studies = {**{n: s for n, s in old.studies.items() if n not in names}, **new["studies"]}
    return {**new, "studies": {n: studies[n] for n in STUDIES if n in studies}, "runs": runs + new["runs"],
            "update_size": new["update_size"] if update_size else old.update_size}


def _job_fields(rec: dict) -> list[str]:
    if rec["kind"] == "update":
        return ["kind", "variant", "config", "lr", "seed"]
    return ["kind", "config", "lr", "warmup", "seed"] + (["steps"] if "steps" in rec else [])


def _summary(content: dict) -> None:
    """Print the outcome of every cell of every study: solved / learning / stuck / diverged out of the seeds."""
    exp = data.Experiments(content)
    for name, study in content["studies"].items():
        print(f"\n{name}: {study['title']}")
        for cell in study["cells"]:
            o = exp.outcomes(**cell["config"], lr=cell["lr"], warmup=cell["warmup"],
                             steps=study.get("steps", content["settings"]["steps"]))
            fields = " ".join(f"{k}={v}" for k, v in cell["config"].items())
            print(f"  {fields:50s} lr {cell['lr']:<6g} warm-up {cell['warmup']:<4g}  solved {o['solved']}/{o['seeds']}"
                  + "".join(f", {k} {o[k]}" for k in ("learning", "stuck", "diverged") if o[k]))


if __name__ == "__main__":
    # Run as the module scripts.experiments, whichever way it was started (`python -m scripts.experiments` or
    # `python scripts/experiments.py`): the Dask workers then import the functions they run, `work` and
    # `fingerprint`, by that name from the same tree (the LocalCluster's workers get this sys.path).
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from scripts import experiments

    sys.exit(experiments.main())
