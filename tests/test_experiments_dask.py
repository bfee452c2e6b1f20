"""`make experiments` on Dask distributed (scripts/experiments.py): tiny jobs through the script's own `main`, on a
running cluster (a `dask scheduler` and two `dask worker` processes on 127.0.0.1, found through DASK_SCHEDULER or
--scheduler) and on the default LocalCluster. The stored records must equal those of the same jobs run here, in
this process; a second run must find every job in the resumable cache, and a run cut short must train only the
jobs that did not finish. Workers that run other code than the client are refused."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from normlab_core import data
from scripts import experiments  # as `make experiments` runs it: the module scripts.experiments

ROOT = Path(__file__).resolve().parents[1]

# A tiny model and a study of it (the real studies are left as they are): 2 placements x 2 depths x 2 seeds of
# 12 steps, and the update-size study at depths 1 and 2 for the same two placements (3 seeds each): 20 jobs.
SIZE = dict(d_model=16, heads=2, d_ff=32, vocab=4, seq_len=3)
STUDIES = {"tiny": {"title": "a tiny model, post- and pre-norm", "fixed": SIZE, "steps": 12, "seeds": [0, 1],
                    "axes": {"placement": ["post", "pre"], "depth": [1, 2], "lr": [1e-2], "warmup": [0.0]}}}
UPDATE = {"lr": 1e-3, "depths": [1, 2],
          "variants": {"post": {"placement": "post", **SIZE}, "pre": {"placement": "pre", **SIZE}}}
TIMEOUT = 120       # seconds for a process to come up or go away (the machine may be loaded)
# The scheduler ends itself after this long without work, should its finalizer never run. xdist runs other modules'
# tests between this module's, and on a loaded machine a gap of 600 s happened: the next test found no scheduler.
IDLE = 3 * 3600


@pytest.fixture
def tiny(monkeypatch, tmp_path):
    """The tiny study in place of the real ones; returns the --out and --cache arguments in tmp_path. The small
    studies that `main` trains here before any cluster (SMALL: the residual MLPs of fail_first.json.gz, 108 runs
    of 300 steps, about 85 CPU-s, written into normlab_core/data) are left out: test_train_fail_first.py checks
    them."""
    monkeypatch.setattr(experiments, "STUDIES", STUDIES)
    monkeypatch.setattr(experiments, "UPDATE", UPDATE)
    monkeypatch.setattr(experiments, "SMALL", {})
    monkeypatch.delenv("DASK_SCHEDULER", raising=False)
    return ["--out", str(tmp_path / "experiments.json.gz"), "--cache", str(tmp_path / "cache")]


def _jobs():
    return experiments.jobs_for(list(STUDIES))


@pytest.fixture(scope="module")
def local_records():
    """The tiny jobs run here, in this process, one after the other: {job key: record} (JSON as the cache stores it)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(experiments, "STUDIES", STUDIES)
        mp.setattr(experiments, "UPDATE", UPDATE)
        jobs = _jobs()
    assert len(jobs) == 20
    out = {}
    for job in jobs:
        rec = json.loads(json.dumps(experiments.run_job(job)))
        assert experiments.record_key(rec) == experiments.stored_key(job)    # the job finds its record
        out[experiments.stored_key(job)] = rec
    return out


def _cache_file(args) -> Path:
    return Path(args[args.index("--cache") + 1]) / f"{experiments.code_hash()}.jsonl"


def _stored(args) -> dict:
    """The cache's records by job key (each line one finished job)."""
    lines = _cache_file(args).read_text().splitlines()
    recs = [json.loads(line) for line in lines]
    out = {experiments.record_key(r): r for r in recs}
    assert len(out) == len(lines)                     # no job stored twice
    return out


def _same_runs(stored: dict, local: dict) -> None:
    """Every record equal to the local run's, to the last bit, except the seconds a run took."""
    assert stored.keys() == local.keys()
    for key, rec in local.items():
        assert {k: v for k, v in stored[key].items() if k != "seconds"} == \
               {k: v for k, v in rec.items() if k != "seconds"}, key


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cmd, log: Path, env) -> subprocess.Popen:
    """A process in a session of its own (so that it and its children can be ended together), output to `log`."""
    with open(log, "wb") as out:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def _stop(procs) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, request):
    """A running Dask cluster as a deployment has one: a `dask scheduler` and two `dask worker` processes (one
    thread each), started from this tree with its normlab_core on PYTHONPATH; yields the scheduler's address.
    The processes are ended when the module's tests are done, whether they passed or not."""
    from distributed import Client

    tmp = tmp_path_factory.mktemp("dask")
    dask = Path(sys.executable).with_name("dask")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
           "DASK_TEMPORARY_DIRECTORY": str(tmp)}
    address = f"tcp://127.0.0.1:{_free_port()}"
    procs = []
    request.addfinalizer(lambda: _stop(procs))
    # (--idle-timeout and --death-timeout: should this process be killed before its finalizer runs, they go too)
    procs.append(_start([str(dask), "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                         "--no-dashboard", "--idle-timeout", str(IDLE)], tmp / "scheduler.log", env))
    for i in range(2):
        procs.append(_start([str(dask), "worker", address, "--nthreads", "1", "--host", "127.0.0.1",
                             "--worker-port", str(_free_port()), "--nanny-port", str(_free_port()),
                             "--no-dashboard", "--memory-limit", "0", "--death-timeout", "60",
                             "--local-directory", str(tmp / f"worker-{i}")], tmp / f"worker-{i}.log", env))
    try:
        with Client(address, timeout=TIMEOUT) as client:
            client.wait_for_workers(2, timeout=TIMEOUT)
    except Exception:
        logs = "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted(tmp.glob("*.log")))
        pytest.fail(f"the Dask cluster did not come up:\n{logs}")
    return address


def _executed(address) -> int:
    """How many tasks the cluster's workers have run so far."""
    from distributed import Client

    with Client(address, timeout=TIMEOUT) as client:
        return sum(client.run(lambda dask_worker: dask_worker.state.executed_count).values())


def test_running_cluster_stores_the_local_runs_and_resumes(cluster, tiny, local_records, monkeypatch, capsys):
    """DASK_SCHEDULER points the script at a running cluster; the cache then holds every job, equal to a run here,
    and the data file is written from them. A second run trains nothing: it does not even ask for a cluster."""
    monkeypatch.setenv("DASK_SCHEDULER", cluster)
    before = _executed(cluster)
    assert experiments.main(["--workers", "2", *tiny]) == 0
    err = capsys.readouterr().err
    assert f"20 jobs (0 cached in {_cache_file(tiny)}), on 2 workers of the Dask scheduler at {cluster}" in err
    assert _executed(cluster) - before == 20          # every job ran on the cluster's workers
    _same_runs(_stored(tiny), local_records)
    out = Path(tiny[tiny.index("--out") + 1])
    stored = data.load(out)
    assert len(stored.runs) == 8 and set(stored.update_size["change"]) == {"post", "pre"}
    assert stored.update_size["change"]["pre"] == [[local_records[experiments.stored_key(j)]["change"] for j in _jobs()
                                                    if j.get("variant") == "pre" and j["seed"] == s] for s in (0, 1, 2)]

    cache_bytes, out_bytes = _cache_file(tiny).read_bytes(), out.read_bytes()
    monkeypatch.setattr(experiments, "dask_client", lambda *a: pytest.fail("a cached run asked for a cluster"))
    assert experiments.main(["--workers", "2", *tiny]) == 0
    assert "20 jobs (20 cached in " in capsys.readouterr().err
    assert _cache_file(tiny).read_bytes() == cache_bytes and out.read_bytes() == out_bytes


def test_scheduler_option_wins_over_the_environment(cluster, tiny, local_records, monkeypatch, capsys):
    """--scheduler ADDRESS is used over DASK_SCHEDULER; with the cache holding all but one job, only that one runs."""
    monkeypatch.setenv("DASK_SCHEDULER", "tcp://127.0.0.1:1")       # nothing listens there
    keys = list(local_records)
    cache = _cache_file(tiny)
    cache.parent.mkdir(parents=True)
    cache.write_text("".join(json.dumps(local_records[k]) + "\n" for k in keys[1:]))
    before = _executed(cluster)
    assert experiments.main(["--scheduler", cluster, *tiny]) == 0
    assert f"20 jobs (19 cached in {cache}), on 2 workers of the Dask scheduler at {cluster}" in capsys.readouterr().err
    assert _executed(cluster) - before == 1
    _same_runs(_stored(tiny), local_records)
    assert cache.read_text().splitlines()[-1] == json.dumps(_stored(tiny)[keys[0]])   # the new job, appended


def test_local_cluster_by_default_resumes_a_cut_run(tiny, local_records, capsys):
    """Without a scheduler the jobs run on a LocalCluster of --workers single-threaded processes. The cache holds
    half of the jobs, as a run stopped half-way leaves it: only the other half is trained, and appended."""
    import dask

    keys = list(local_records)
    cache = _cache_file(tiny)
    cache.parent.mkdir(parents=True)
    cache.write_text("".join(json.dumps(local_records[k]) + "\n" for k in keys[::2]))
    with dask.config.set({"temporary-directory": str(cache.parent)}):
        assert experiments.main(["--workers", "2", *tiny]) == 0
    err = capsys.readouterr().err
    assert f"20 jobs (10 cached in {cache}), on 2 workers of a LocalCluster on this machine" in err
    assert len(cache.read_text().splitlines()) == 20
    _same_runs(_stored(tiny), local_records)


def test_workers_with_other_code_are_refused(cluster, tiny, monkeypatch, capsys):
    """A worker whose code, numpy or BLAS differs from the client's runs no job: `work` raises, and a run on a
    cluster of such workers stops before it submits anything."""
    from distributed import Client

    want = experiments.expected()
    job = _jobs()[0]
    for field in ("code", "numpy", "simd", "blas"):
        with pytest.raises(RuntimeError, match=f"runs other code than the client: {field} "):
            experiments.work(job, {**want, field: "other"})
    with Client(cluster, timeout=TIMEOUT) as client:
        assert experiments.check_workers(client, want) == []
        problems = experiments.check_workers(client, {**want, "numpy": "0.0"})
    assert len(problems) == 2 and all(p.startswith("error: worker tcp://127.0.0.1:") and "numpy" in p
                                      for p in problems)

    monkeypatch.setattr(experiments, "expected", lambda: {**want, "numpy": "0.0"})
    before = _executed(cluster)
    assert experiments.main(["--scheduler", cluster, *tiny]) == 1
    assert capsys.readouterr().err.count("runs other code than the client: numpy") == 2
    assert _executed(cluster) == before and not _cache_file(tiny).exists()
