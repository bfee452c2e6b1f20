"""`make bench`: slider latency, burst coalescing, the exact sensitivity curve and LayerNorm/RMSNorm throughput.

Writes _build/bench/results.json and prints a table. Every figure is a median over repeats taken in this run
(the machine may be shared, so the baselines are measured in the same run, interleaved where it matters).
Nothing here is asserted: the goals are reported as met or missed, with the reason where one is known.

    MPLBACKEND=Agg .venv/bin/python -m scripts.bench [--only NAME ...] [--skip-fd] [--repeats N] [--training-only]
        [--lab-training-only] [--explorables-only]

`--only NAME ... --explorables-only` measures just those explorables' updates and bursts (a minute, not the
whole bench), e.g. after changing one figure module.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import warnings
from pathlib import Path

import numpy as np

GOALS = {
    "update_ms": 25.0,        # warm frame() median per explorable
    "speedup_vs_naive": 3.0,  # naive median / warm median
    "burst_ms": 100.0,        # 50 value changes -> last value shown
    "exact_curve_ms": 10.0,   # sensitivity_curve to depth 1024
}
# (The 0.2 x memcpy goal for layer_norm went with the cache-blocked path, issue 21: the reference norms are
# plain numpy again, and the book never normalizes arrays where a reader would notice. It is still measured.)
OUT = Path("_build/bench/results.json")


def _ms(seconds: float) -> float:
    return round(seconds * 1e3, 3)


def _timed(fn, *args, **kw) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return time.perf_counter() - t0, out


# -- slider latency --------------------------------------------------------------------------------------

def sweep_values(exp) -> list[dict]:
    """Each control across its positions(), the others at their defaults (the default frame once)."""
    defaults = exp.defaults()
    sweep, seen = [], set()
    for name, control in exp.controls.items():
        for v in control.positions():
            values = {**defaults, name: v}
            key = tuple(sorted((k, repr(x)) for k, x in values.items()))
            if key not in seen:
                seen.add(key)
                sweep.append(values)
    return sweep


def own_values(exp, n: int = 12) -> list[dict]:
    """n states with a value typed between the stops (never drawn before): a learner's own values."""
    rng = np.random.default_rng(12)
    free = [(k, c) for k, c in exp.controls.items() if getattr(c, "free", None)]
    out = []
    for i in range(n if free else 0):
        k, c = free[i % len(free)]
        lo, hi = c.free
        v = float(rng.uniform(lo, hi))
        out.append({k: int(round(v)) if c.integer else v})
    return out


def naive_frame(exp, values: dict) -> bytes:
    """What a plain `interact` callback does: a new figure from scratch, a full draw and a PNG, per change."""
    from normlab_core.canvas import DPI, SHARPNESS, blank_figure, figure_png, house_style

    values, inputs = exp.resolve(values)
    fig = blank_figure(*exp.size, dpi=DPI * SHARPNESS)
    with warnings.catch_warnings(), house_style():
        warnings.simplefilter("ignore")
        art = exp.setup(fig, narrow=False, **inputs)
        exp.update(art, **values, **inputs)
    return figure_png(fig)


def p90(ms: list[float]) -> float:
    s = sorted(ms)
    return s[min(len(s) - 1, max(0, int(round(0.9 * len(s))) - 1))]


def bench_explorable(exp, naive_max: int) -> dict:
    """Explorable.render times: the first visit of each stop's state (the figure built already), the same states
    again, values typed between the stops (a learner's own values, never drawn), the narrow layout, and the naive
    way on up to `naive_max` of the same states."""
    values = sweep_values(exp)
    exp.render()
    exp.render(narrow=True)
    frame_s, cpu_s = [], []
    for v in values:
        c0 = time.process_time()
        frame_s.append(_timed(exp.render, **v)[0])
        cpu_s.append(time.process_time() - c0)
    cached_s = [_timed(exp.render, **v)[0] for v in values]
    narrow_s = [_timed(exp.render, narrow=True, **v)[0] for v in values]
    own_s = [_timed(exp.render, **v)[0] for v in own_values(exp)]
    step = max(1, len(values) // naive_max)
    naive_values = values[::step][:naive_max]
    naive_frame(exp, naive_values[0])  # warm-up (imports, font cache)
    naive_s = [_timed(naive_frame, exp, v)[0] for v in naive_values]
    row = {
        "update_ms_median": _ms(statistics.median(frame_s)),
        "update_ms_p90": _ms(p90(frame_s)),
        "update_cpu_ms_median": _ms(statistics.median(cpu_s)),
        "update_ms_median_cached": _ms(statistics.median(cached_s)),
        "narrow_ms_median": _ms(statistics.median(narrow_s)),
        "own_value_ms_p90": _ms(p90(own_s)) if own_s else None,
        "naive_ms_median": _ms(statistics.median(naive_s)),
        "update_ms_max": _ms(max(frame_s)),
        "frames": len(frame_s),
        "naive_frames": len(naive_s),
    }
    row["speedup"] = round(row["naive_ms_median"] / row["update_ms_median"], 2)
    row["meets_goal"] = (row["update_ms_median"] <= GOALS["update_ms"]
                         and row["speedup"] >= GOALS["speedup_vs_naive"])
    busy = row["update_cpu_ms_median"] <= GOALS["update_ms"] < row["update_ms_median"]
    row["why"] = "" if row["meets_goal"] else (f"median {row['update_ms_median']:.1f} ms, p90 "
                                               f"{row['update_ms_p90']:.1f} ms " + (
                                                   f"(its CPU time, {row['update_cpu_ms_median']:.1f} ms, is within "
                                                   "the goal: the rest is waiting for a shared CPU)" if busy else
                                                   "(a frame is drawn in full when an axis' limits, a title or a "
                                                   "legend change)"))
    return row


# -- burst ------------------------------------------------------------------------------------------------

def burst_control(exp) -> int:
    """The index of the control a burst moves along: the first slider, or the first control (a choice) where the
    explorable has no slider."""
    from normlab_core.interactive import Slider

    controls = list(exp.controls.values())
    return next((i for i, c in enumerate(controls) if isinstance(c, Slider)), 0)


def burst_keys(start: list, k: int, stops: int, n: int) -> list[str]:
    """n state keys stepping control k on from `start` (stop indices, as text) through its `stops` positions, round
    and round; the last is never the state already shown."""
    step = 1 if n % stops else 2
    keys = []
    for i in range(n):
        parts = list(start)
        parts[k] = str((int(start[k]) + step + i) % stops)
        keys.append(",".join(parts))
    return keys


def bench_burst(exp, n: int = 50) -> dict:
    """n requests of the live face for states along the first slider (or, with none, the first control), as fast
    as they come; time until the kernel's frame shows the last one."""
    from normlab_core.interactive.live import LiveView, key_values

    view = LiveView(exp)
    view.send = lambda *a, **k: None
    k = burst_control(exp)
    start = [str(p) for p in view.spec["start"]]
    stops = len(list(exp.controls.values())[k].positions())
    keys = burst_keys(start, k, stops, n)
    view.wait()
    draws = view.draws
    t0 = time.perf_counter()
    for key in keys:
        view._on_msg(view, {"want": key, "layout": "wide", "view": "bench"}, [])
    done = view.wait(timeout=30)
    elapsed = time.perf_counter() - t0
    last = exp.render(**key_values(exp, keys[-1]))
    result = {"control": list(exp.controls)[k], "positions": stops, "ms": _ms(elapsed), "draws": view.draws - draws,
              "finished": bool(done), "shows_last_value": view.frame["key"] == keys[-1] and view.png == last.png}
    view.close()
    return result


# -- sensitivity curve ------------------------------------------------------------------------------------

def bench_sensitivity(depth: int, repeats: int, skip_fd: bool) -> dict:
    from normlab_core.residual import sensitivity, sensitivity_curve

    x0 = np.array([1.0, 2.0, 3.0, 4.0])  # the chapter's input
    out = {"depth": depth}
    for placement in ("post", "pre"):
        sensitivity_curve(x0, depth, placement)
        times = [_timed(sensitivity_curve, x0, depth, placement)[0] for _ in range(repeats)]
        out[f"exact_ms_{placement}"] = _ms(statistics.median(times))
    out["exact_ms"] = max(out["exact_ms_post"], out["exact_ms_pre"])
    if skip_fd:
        out["finite_difference_ms"] = None
    else:
        x32 = x0.astype(np.float32)  # the chapter's listing works in float
        t, _ = _timed(lambda: [sensitivity(x32, d, "post", method="finite_difference")
                               for d in range(1, depth + 1)])
        out["finite_difference_ms"] = _ms(t)
        out["finite_difference_note"] = "post-norm, float32 x0, one run (O(depth^2) layer evaluations)"
    return out


# -- core throughput --------------------------------------------------------------------------------------

def bench_throughput(shape=(8192, 4096), repeats: int = 9) -> dict:
    """layer_norm / rms_norm forward vs np.copyto of the same array, interleaved rounds, medians."""
    from normlab_core import norms

    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    dst = np.empty_like(x)
    cases = {
        "memcpy": lambda: np.copyto(dst, x),
        "layer_norm": lambda: norms.layer_norm(x),
        "rms_norm": lambda: norms.rms_norm(x),
    }
    for fn in cases.values():
        fn()
    times = {k: [] for k in cases}
    for _ in range(repeats):
        for k, fn in cases.items():
            times[k].append(_timed(fn)[0])
    moved = 2 * x.nbytes  # read x + write y
    med = {k: statistics.median(v) for k, v in times.items()}
    gbps = {k: round(moved / s / 1e9, 3) for k, s in med.items()}
    return {
        "shape": list(shape),
        "dtype": "float32",
        "GBps": gbps["layer_norm"],
        "rms_GBps": gbps["rms_norm"],
        "memcpy_GBps": gbps["memcpy"],
        "ms": {k: _ms(s) for k, s in med.items()},
        "layer_norm_vs_memcpy": round(gbps["layer_norm"] / gbps["memcpy"], 3),
        "rms_vs_memcpy": round(gbps["rms_norm"] / gbps["memcpy"], 3),
        # the same ratio per interleaved round (robust to a burst of load hitting one case), and against
        # the fastest memcpy seen (the strict baseline: interference only ever slows memcpy down)
        "layer_norm_vs_memcpy_per_round": round(statistics.median(
            c / ln for c, ln in zip(times["memcpy"], times["layer_norm"], strict=True)), 3),
        "layer_norm_vs_best_memcpy": round(min(times["memcpy"]) / med["layer_norm"], 3),
        "rms_over_layer_norm_speed": round(med["layer_norm"] / med["rms_norm"], 2),
        "repeats": repeats,
    }


# -- the static site --------------------------------------------------------------------------------------

def bench_site(site: Path) -> dict | None:
    """Sizes of the built book (None when `make book` has not run): the whole site, the explorables' frame
    files, and per page with explorables its first load (HTML + the files it loads before a control moves,
    shared theme/MathJax files under _static not counted) and what its frames add up to."""
    import json
    import re

    from scripts.finish_site import _is_shared, _local_size, _PageScan
    from scripts.place_frames import DIR

    if not (site / "index.html").is_file():
        return None
    files = [f for f in site.rglob("*") if f.is_file()]
    frames = [f for f in files if "nl-frames" in f.parts]
    pages = {}
    for page in sorted(site.rglob("*.html")):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        text = page.read_text(encoding="utf-8")
        n_exp = len(re.findall(r'class="normlab-explorable', text))
        if not n_exp:
            continue
        scan = _PageScan()
        scan.feed(text)
        first = len(text.encode("utf-8")) + sum(_local_size(page, url, site) for _, url in scan.resources
                                                if not url.startswith("data:") and not _is_shared(page, url, site))
        layouts = {"wide": set(), "narrow": set()}
        for folder in DIR.findall(text):
            table_js = (page.parent / folder / "table.js").read_text(encoding="utf-8")
            table = json.loads(table_js[table_js.index("(") + 1:table_js.rindex(")")])
            for wide, narrow, *_ in table["frames"].values():
                layouts["wide"].add(page.parent / folder / table["files"][wide])
                layouts["narrow"].add(page.parent / folder / table["files"][narrow])
        size = {k: sum(f.stat().st_size for f in v) for k, v in layouts.items()}
        pages[page.relative_to(site).as_posix()] = {
            "explorables": n_exp, "html_kb": round(len(text.encode("utf-8")) / 1024, 1),
            "first_load_kb": round(first / 1024, 1),
            "frame_files": len(layouts["wide"] | layouts["narrow"]),
            "frames_mb": round(sum(size.values()) / 2**20, 2),
            "wide_mb": round(size["wide"] / 2**20, 2), "narrow_mb": round(size["narrow"] / 2**20, 2),
        }
    wide = sum(r["wide_mb"] for r in pages.values())
    return {
        "site_mb": round(sum(f.stat().st_size for f in files) / 2**20, 1),
        "narrow_over_wide": round(sum(r["narrow_mb"] for r in pages.values()) / wide, 3) if wide else None,
        "frame_files": len(frames),
        "frames_mb": round(sum(f.stat().st_size for f in frames) / 2**20, 1),
        "first_load_goal_kb": 1536,
        "pages": pages,
    }


# -- report -----------------------------------------------------------------------------------------------

def _flag(ok: bool) -> str:
    return "ok" if ok else "MISS"


def print_table(res: dict) -> None:
    print_explorables(res)
    print_rest(res)


def print_explorables(res: dict) -> None:
    """The table of explorable update times (and the reasons for a missed goal)."""
    print(f"normlab bench  ({res['machine']['nproc']} cores, numpy {res['machine']['numpy']}, "
          f"command: {res['command']})\n")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    start = (res.get("load_avg_start") or [float("nan")])[0]
    print(f"load average {start:.1f} at the start, {load:.1f} at the end, on {res['machine']['nproc']} cores (wall "
          "times grow with it; 'cpu ms' is this process's CPU time per frame)")
    print("warm ms: each stop's state drawn for the first time by Explorable.render (the figure built already); "
          "cached: the same states again (kept backgrounds); narrow: the phone layout; own p90: values typed between "
          "the stops, never drawn before (goal <= 80 ms in JupyterLab, kernel share here).\n")
    print(f"{'explorable':28s} {'warm ms':>8s} {'p90':>6s} {'cpu ms':>7s} {'cached':>7s} {'narrow':>7s} "
          f"{'own p90':>8s} {'naive ms':>9s} {'speedup':>8s} {'goal':>5s}")
    for name, r in res["explorables"].items():
        if "error" in r:
            print(f"{name:28s} ERROR {r['error']}")
            continue
        own = f"{r['own_value_ms_p90']:8.1f}" if r["own_value_ms_p90"] is not None else f"{'-':>8s}"
        print(f"{name:28s} {r['update_ms_median']:8.1f} {r['update_ms_p90']:6.1f} {r['update_cpu_ms_median']:7.1f} "
              f"{r['update_ms_median_cached']:7.1f} {r['narrow_ms_median']:7.1f} {own} {r['naive_ms_median']:9.1f} "
              f"{r['speedup']:7.1f}x {_flag(r['meets_goal']):>5s}")
    for name, r in res["explorables"].items():
        if r.get("why"):
            print(f"  {name}: {r['why']}")
    print_burst(res)


def print_burst(res: dict) -> None:
    b = res["burst"]
    print(f"\nburst: 50 changes -> last value shown in {res['burst_last_frame_ms']:.1f} ms "
          f"(worst explorable: {b['worst']}), goal <= {GOALS['burst_ms']:g} ms: "
          f"{_flag(res['burst_last_frame_ms'] <= GOALS['burst_ms'])}")
    for name, r in b["per_explorable"].items():
        if "error" in r:
            print(f"  {name:28s} ERROR {r['error']}")
        else:
            print(f"  {name:28s} {r['ms']:7.1f} ms  {r['draws']} draw(s)  control {r['control']} "
                  f"({r['positions']} positions)"
                  f"{'' if r['shows_last_value'] else '  (image does NOT show the last value)'}")


def print_rest(res: dict) -> None:
    s = res["sensitivity_curve"]
    fd = "skipped" if s["finite_difference_ms"] is None else f"{s['finite_difference_ms']:.0f} ms"
    print(f"\nsensitivity curve to depth {s['depth']}: exact {s['exact_ms_post']:.1f} ms (post), "
          f"{s['exact_ms_pre']:.1f} ms (pre); chapter's finite differences {fd}; "
          f"goal <= {GOALS['exact_curve_ms']:g} ms: {_flag(s['exact_ms'] <= GOALS['exact_curve_ms'])}")
    t = res["layer_norm"]
    print(f"\nthroughput on {tuple(t['shape'])} {t['dtype']} (read x + write y, median of {t['repeats']}):")
    for key, label in (("memcpy", "np.copyto"), ("layer_norm", "layer_norm"), ("rms_norm", "rms_norm")):
        gb = {"memcpy": t["memcpy_GBps"], "layer_norm": t["GBps"], "rms_norm": t["rms_GBps"]}[key]
        print(f"  {label:24s} {t['ms'][key]:8.1f} ms  {gb:6.2f} GB/s  {gb / t['memcpy_GBps']:5.2f} x memcpy")
    print(f"  layer_norm / memcpy: {t['layer_norm_vs_memcpy']:.3f} (medians), "
          f"{t['layer_norm_vs_memcpy_per_round']:.3f} (median of per-round ratios), "
          f"{t['layer_norm_vs_best_memcpy']:.3f} (vs the fastest memcpy)")
    print("  (no goal for layer_norm / memcpy: the norms are plain reference code); "
          f"RMSNorm is {t['rms_over_layer_norm_speed']:.2f}x as fast as LayerNorm")
    site = res.get("static_site")
    if site:
        print(f"\nstatic site: {site['site_mb']} MB in all, {site['frame_files']} frame files "
              f"({site['frames_mb']} MB); narrow frames / wide frames: {site['narrow_over_wide']} "
              "(goal <= 1.0: adding at most 100 %)")
        print(f"  {'page':40s} {'first load KB':>13s} {'frames':>7s} {'wide MB':>8s} {'narrow MB':>9s}  "
              "goal <= 1536 KB")
        for name, r in site["pages"].items():
            print(f"  {name:40s} {r['first_load_kb']:13.1f} {r['frame_files']:7d} {r['wide_mb']:8.2f} "
                  f"{r['narrow_mb']:9.2f}  {_flag(r['first_load_kb'] <= site['first_load_goal_kb'])}")
    else:
        print("\nstatic site: not built (run `make book` first to get its sizes here)")
    print(f"\nwritten: {OUT}")


# -- the training lab: one training step, and a whole run ---------------------------------------------------------

# make experiments: 30 min was the goal of the first grid; the studies added since (more seeds, the placement
# and fail-first studies) are held to 75 min on two cores, the goal the book's lab works to (docs/experiments.md).
TRAINING_GOALS = {"run_500_depth12_s": 30.0, "experiments_min": 75.0}


def _training_step_times(depth: int, dtype: str, repeats: int) -> dict:
    """Median wall time of one loss_and_grads + Adam step at this depth (how it splits: notes/training-step.md)."""
    from normlab_core.training import Adam, reversal_batch
    from normlab_core.transformer import Config, init_params, loss_and_grads

    cfg = Config(depth=depth, placement="pre")
    params = init_params(cfg, 0, np.dtype(dtype))
    tokens = reversal_batch(np.random.default_rng(0), 32)
    opt = Adam(params)

    def step(p):
        _, grads = loss_and_grads(p, cfg, tokens)
        opt.step(p, grads, 0.0)      # lr 0: the same work, the same parameters every repeat

    step(params)
    total = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step(params)
        total.append(time.perf_counter() - t0)
    return {"depth": depth, "dtype": dtype, "step_ms": _ms(statistics.median(total))}


# The run the lab bench times both ways: post-norm, depth 12, 500 steps, peak lr 3e-3, 15 % warm-up, seed 0.
LAB_RUN = {"config": {"depth": 12, "placement": "post"}, "lr": 3e-3, "steps": 500, "warmup": 0.15, "seed": 0}


def _training_worker(repeats: int, only_experiments_run: bool = False) -> dict:
    """Runs in a fresh process with one BLAS thread and the allocator settings of `make experiments`: step
    timings and a whole 500-step run at depth 12, or (only_experiments_run) LAB_RUN exactly as `make experiments`
    runs a job."""
    from normlab_core.training import run
    from normlab_core.transformer import Config
    from scripts import experiments

    experiments.tune_allocator()
    out = {}
    if not only_experiments_run:
        out["steps"] = [_training_step_times(d, dt, repeats) for dt in ("float32", "float64") for d in (6, 12, 24)]
        t0 = time.perf_counter()
        r = run(Config(depth=12, placement="post"), 3e-3, 500, 0.15, 0, progress=False)
        return {**out, "run_500_depth12_s": round(time.perf_counter() - t0, 2), "run_outcome": r.outcome}
    assert LAB_RUN["steps"] == experiments.STEPS
    job = {"kind": "train", **{k: v for k, v in LAB_RUN.items() if k != "steps"}}
    t0 = time.perf_counter()
    rec = experiments.run_job(job)
    return {"s": round(time.perf_counter() - t0, 2), "outcome": rec["outcome"], "final_loss": rec["final_loss"],
            "eval_every": experiments.EVAL_EVERY}


def _experiments_worker(repeats: int, only_experiments_run: bool = False) -> dict:
    """_training_worker in a fresh process started as `make experiments` starts its workers (one BLAS thread)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    saved = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")   # read by numpy in the fresh process
    try:
        with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
            return pool.submit(_training_worker, repeats, only_experiments_run).result()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def bench_training(repeats: int = 15) -> dict:
    """The training lab on one core: step timings at depths 6, 12 and 24, a 500-step depth-12 run, and the wall time
    `make experiments` needs at these speeds on two cores."""
    res = _experiments_worker(repeats)
    from scripts import experiments

    per_layer_run = res["run_500_depth12_s"] / 12     # a whole run per layer, its evaluations included
    work = sum(per_layer_run * job["config"]["depth"] * (1.3 if job["config"].get("placement") == "peri" else 1)
               for job in experiments.jobs_for(list(experiments.STUDIES)) if job["kind"] == "train")
    res["experiments_estimate_min"] = round(work / 2 / 60, 1)
    res["command"] = "make bench  (or: MPLBACKEND=Agg .venv/bin/python -m scripts.bench --training-only)"
    return res


# -- the training lab in a learner's JupyterLab kernel ----------------------------------------------------------------

LAB_GOAL_RATIO = 1.2     # train() in a `make lab` kernel against the same run in `make experiments`

# Sent to the kernel: BLAS's threads as the kernel started, then LAB_RUN through the learner's train() (its progress
# bar and live figure included; `extra`: more arguments of train()), then one line of JSON.
LAB_CODE = """
import json, time
import numpy
from threadpoolctl import threadpool_info
threads = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
from normlab_core.training_live import train
t0 = time.perf_counter()
r = train(lr={lr!r}, steps={steps!r}, warmup={warmup!r}, seed={seed!r}, **{config!r}, **{extra!r})
seconds = time.perf_counter() - t0
print("NORMLAB-BENCH " + json.dumps({{"s": round(seconds, 2), "outcome": r.outcome, "final_loss": r.final_loss,
      "blas_threads_at_start": threads, "steps_done": len(r.loss)}}))
"""


def _kernel_execute(server, kernel_id: str, code: str, timeout: float) -> str:
    """Run `code` in a kernel of `server` over its websocket, as JupyterLab's front end does; returns its stdout
    (raises with the traceback on an error)."""
    import uuid

    import websocket  # websocket-client, a dependency of JupyterLab's own tooling

    ws = websocket.create_connection(f"ws://127.0.0.1:{server.port}/api/kernels/{kernel_id}/channels"
                                     f"?token={server.token}", timeout=timeout)
    try:
        msg_id, session = uuid.uuid4().hex, uuid.uuid4().hex
        ws.send(json.dumps({
            "header": {"msg_id": msg_id, "username": "bench", "session": session, "msg_type": "execute_request",
                       "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        out, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            opcode, data = ws.recv_data()
            if opcode != websocket.ABNF.OPCODE_TEXT:   # messages with buffers (widget images) come as binary frames
                continue
            msg = json.loads(data)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["header"]["msg_type"]
            if kind == "stream" and msg["content"]["name"] == "stdout":
                out.append(msg["content"]["text"])
            elif kind == "error":
                raise RuntimeError("\n".join(msg["content"]["traceback"]))
            elif kind == "execute_reply":
                return "".join(out)
        raise TimeoutError(f"the kernel did not finish in {timeout:.0f} s")
    finally:
        ws.close()


def _lab_kernel_runs(variants: dict, timeout: float = 1800.0) -> dict:
    """LAB_RUN through train(**extra) for each name -> extra of `variants`, one after the other in one kernel of a
    private JupyterLab started with `make lab`'s learner configuration (scripts/lab.py's lab_env: lab/learner first
    on JUPYTER_CONFIG_PATH), the kernel started over the REST API as JupyterLab starts one for a notebook, with none
    of the thread variables `make experiments` sets."""
    import urllib.request

    from scripts.lab_session import LabServer  # the JupyterLab tests' server (a temporary root, no browser)

    server = LabServer(notebooks=[])
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        server.env.pop(k, None)           # a learner's shell need not set them
    with server:
        req = urllib.request.Request(server.url("api/kernels"), data=json.dumps({"name": "python3"}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=60) as r:
            kernel = json.loads(r.read())
        res = {}
        for name, extra in variants.items():
            out = _kernel_execute(server, kernel["id"], LAB_CODE.format(**LAB_RUN, extra=extra), timeout)
            line = next(x for x in out.splitlines() if x.startswith("NORMLAB-BENCH "))
            res[name] = {**json.loads(line.split(" ", 1)[1]), "train_arguments": extra}
    return res


def bench_lab_training() -> dict:
    """LAB_RUN as `make experiments` runs it (a fresh process, one BLAS thread, its allocator settings), then through
    train() in a `make lab` kernel twice: with make experiments' held-out schedule (the same run: the goal's ratio,
    <= LAB_GOAL_RATIO) and with train()'s own (a held-out evaluation and a redraw 25 times per run)."""
    from scripts import experiments

    load = [os.getloadavg()[0]]
    ref = _experiments_worker(0, only_experiments_run=True)
    load.append(os.getloadavg()[0])
    lab = _lab_kernel_runs({"same_schedule": {"eval_every": experiments.EVAL_EVERY}, "train_default": {}})
    load.append(os.getloadavg()[0])
    out = {"run": LAB_RUN, "experiments": ref, "lab_kernel": lab, "goal": LAB_GOAL_RATIO, "load_avg": load}
    for r in lab.values():
        r["ratio"] = round(r["s"] / ref["s"], 3)
        r["same_result"] = abs(r["final_loss"] - ref["final_loss"]) <= 1e-4 * abs(ref["final_loss"])
    out["ratio"] = lab["same_schedule"]["ratio"]
    out["meets_goal"] = out["ratio"] <= LAB_GOAL_RATIO
    return out


def print_lab_training(t: dict) -> None:
    r, e, k = t["run"], t["experiments"], t["lab_kernel"]
    print(f"\ntrain() in a make-lab kernel against make experiments: {r['config']['placement']}-norm, depth "
          f"{r['config']['depth']}, {r['steps']} steps, lr {r['lr']:g}, warm-up {r['warmup']:.0%}, seed {r['seed']}; "
          f"load average {t['load_avg'][0]:.1f} / {t['load_avg'][1]:.1f} / {t['load_avg'][2]:.1f} (start, between, "
          "end)")
    print(f"  make experiments' way (one BLAS thread by environment, held-out every {e['eval_every']} steps): "
          f"{e['s']:.1f} s, {e['outcome']}, final held-out loss {e['final_loss']}")
    words = {"same_schedule": f"held-out every {e['eval_every']} steps as there",
             "train_default": "train()'s own schedule, 25 held-out evaluations and redraws"}
    for name, r in k.items():
        goal = f", goal <= {t['goal']:g}x: {_flag(r['ratio'] <= t['goal'])}" if name == "same_schedule" else ""
        print(f"  train() in a make-lab kernel, {words[name]} (BLAS threads at the kernel's start: "
              f"{r['blas_threads_at_start']}; live figure and progress bar): {r['s']:.1f} s, {r['outcome']}, final "
              f"held-out loss {r['final_loss']:.5g}: {r['ratio']:.2f}x{goal}"
              f"{'' if r['same_result'] else '  (this run ended differently!)'}")


def print_training(t: dict, load_start, load_end) -> None:
    print(f"\ntraining lab, one core (OMP_NUM_THREADS=1, allocator as in make experiments), batch 32, pre-norm "
          f"LayerNorm; load average "
          f"{load_start[0]:.1f} at its start, {load_end[0]:.1f} at its end:")
    print(f"  {'dtype':8s} {'depth':>5s} {'step ms':>8s}")
    for r in t["steps"]:
        print(f"  {r['dtype']:8s} {r['depth']:5d} {r['step_ms']:8.1f}")
    goal = TRAINING_GOALS["run_500_depth12_s"]
    print(f"  500-step run at depth 12 (post-norm, float32, with its evaluations): {t['run_500_depth12_s']:.1f} s, "
          f"goal <= {goal:g} s: {_flag(t['run_500_depth12_s'] <= goal)}")
    goal = TRAINING_GOALS["experiments_min"]
    print(f"  make experiments on 2 cores, estimated from that run's time per layer (the real run takes a little "
          f"longer: two workers side by side each run slower than one alone): "
          f"{t['experiments_estimate_min']:.1f} min, goal <= {goal:g} min: "
          f"{_flag(t['experiments_estimate_min'] <= goal)}")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="catalog names to measure (default: every entry)")
    ap.add_argument("--skip-fd", action="store_true", help="skip the O(depth^2) finite-difference curve")
    ap.add_argument("--repeats", type=int, default=9, help="repeats of the throughput and curve timings")
    ap.add_argument("--naive-max", type=int, default=12, help="naive frames per explorable (spread over the sweep)")
    ap.add_argument("--training-only", action="store_true", help="only the training lab's step and run timings")
    ap.add_argument("--lab-training-only", action="store_true",
                    help="only train() in a make-lab kernel against the same run in make experiments")
    ap.add_argument("--explorables-only", action="store_true",
                    help="only the explorables' update and burst timings (with --only: just those)")
    args = ap.parse_args(argv)
    if args.lab_training_only:
        res = {"lab_training": bench_lab_training()}
        print_lab_training(res["lab_training"])
        return res
    if args.training_only:
        res = {"load_avg_start": os.getloadavg(), "training": bench_training()}
        res["load_avg_end"] = os.getloadavg()
        print_training(res["training"], res["load_avg_start"], res["load_avg_end"])
        return res

    from normlab_core.figures import catalog

    entries = catalog()
    names = args.only or list(entries)
    load_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    res = {
        "machine": {"nproc": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
                    "python": platform.python_version(), "numpy": np.__version__,
                    "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE")},
        "command": "make bench  (MPLBACKEND=Agg .venv/bin/python -m scripts.bench)",
        "goals": GOALS,
        "load_avg_start": load_start,
        "explorables": {},
    }
    for name in names:
        try:
            res["explorables"][name] = bench_explorable(entries[name], args.naive_max)
        except Exception as err:  # one broken entry must not hide the others' numbers
            res["explorables"][name] = {"error": f"{type(err).__name__}: {err}"}
    per = {}
    for name in names:
        try:
            per[name] = bench_burst(entries[name])
        except Exception as err:
            per[name] = {"error": f"{type(err).__name__}: {err}"}
    ok = {k: v for k, v in per.items() if "error" not in v}
    worst = max(ok, key=lambda k: ok[k]["ms"]) if ok else None
    res["burst_last_frame_ms"] = ok[worst]["ms"] if worst else None
    res["burst"] = {"changes": 50, "worst": worst, "per_explorable": per}
    if args.explorables_only:
        print_explorables(res)
        return res
    res["sensitivity_curve"] = bench_sensitivity(1024, args.repeats, args.skip_fd)
    res["layer_norm"] = bench_throughput(repeats=args.repeats)
    res["static_site"] = bench_site(Path("_build/html"))
    training_load = os.getloadavg()
    res["training"] = bench_training()
    try:
        res["lab_training"] = bench_lab_training()
    except Exception as err:  # noqa: BLE001 - a server that would not start must not hide the other numbers
        res["lab_training"] = {"error": f"{type(err).__name__}: {err}"}
    res["load_avg_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(res, indent=2) + "\n")
    print_table(res)
    print_training(res["training"], training_load, res["load_avg_end"])
    if "error" in res["lab_training"]:
        print(f"\ntrain() in a make-lab kernel: ERROR {res['lab_training']['error']}")
    else:
        print_lab_training(res["lab_training"])
    return res


if __name__ == "__main__":
    main()
