"""`make bench` (grading): `make grade` on a synthetic class, in a temporary copy of the course.

The class mixes correct, wrong and blank submissions (by default 300: 40 % the reference solution, 40 % one of
the plausible mistakes or delegating answers of the grading tests, 20 % blank), each graded in its own
bubblewrap sandbox with the course's own limits. Reports the total time, the time per submission (the
worker's run in the sandbox and judging; mean, median, 95th percentile, max), the phases (running and
judging; the feedback still being written after the last grade, since each page is written in a bounded
child as soon as its grades are recorded; and the pages' own times summed), a second run with nothing changed,
a third after five students handed in again (the incremental re-run), the CPU time of all the run's
processes (on a shared machine the wall clock depends on the others' load), the load average before and
after, and whether the goals are met (300 submissions in 10 minutes on this machine, feedback at most 40 %
of the total, the re-run of five in 30 s).
Writes _build/bench/grading.json.
Nothing is asserted.

    .venv/bin/python scripts/bench_grading.py [--students N] [--jobs J] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
GOAL_SECONDS = 600.0  # for 300 submissions
FEEDBACK_SHARE = 0.40  # of the total, at most
RERUN_GOAL_SECONDS = 30.0  # a re-run after five submissions changed
CHANGED = 5
OUT = ROOT / "_build" / "bench" / "grading.json"


def build_class(course: Path, n: int) -> dict[str, str]:
    import grading_support as gs
    import nbformat

    gs.mx.copy_course(course)
    gs.nbgrader_here(course, "generate_assignment", gs.mx.ASSIGNMENT, "--force")
    source = nbformat.read(gs.SOURCE, as_version=4)
    released = nbformat.read(course / "release" / gs.mx.ASSIGNMENT / gs.mx.NOTEBOOK, as_version=4)
    subs = gs.submissions(source, released)
    wrong = ["wrong_a", "wrong_b", "wrong_c", "delegating", "patched", "alwaysequal", "float64", "summean"]
    kinds = {}
    for i in range(n):
        r = i % 10
        kind = "reference" if r < 4 else ("blank" if r >= 8 else wrong[i % len(wrong)])
        student = f"s{i:03d}"
        nb = nbformat.from_dict(subs[kind])
        nb.cells.append(nbformat.v4.new_markdown_cell(f"Submitted by {student}."))  # every notebook differs
        folder = course / "submitted" / student / gs.mx.ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / gs.mx.NOTEBOOK)
        kinds[student] = kind
    return kinds


CPU: list = []   # CPU seconds (user and system) of each `make grade` run
CPUACCT = Path("/sys/fs/cgroup/cpuacct")   # cgroup v1's CPU accounting, a hierarchy of its own


def cpu_counter() -> tuple:
    """How this script counts the CPU time of its runs: ("cgroup", folder) when it could move itself into a
    cpuacct cgroup of its own (root, cgroup v1), which counts every process started from here, the sandboxes
    too; else ("rusage", None): the children's resource usage, which misses the sandboxes (they are killed,
    not waited for)."""
    if os.geteuid() == 0 and (CPUACCT / "cpuacct.usage").is_file():
        folder = CPUACCT / f"normlab-bench-{os.getpid()}"
        try:
            folder.mkdir(exist_ok=True)
            (folder / "cgroup.procs").write_text(str(os.getpid()))
            return "cgroup", folder
        except OSError:
            pass
    return "rusage", None


def leave_counter(counter: tuple) -> None:
    kind, folder = counter
    if kind == "cgroup":
        try:
            (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
            folder.rmdir()
        except OSError:
            pass


COUNTER: list = []


def children_cpu() -> float:
    kind, folder = COUNTER[0] if COUNTER else ("rusage", None)
    if kind == "cgroup":
        return int((folder / "cpuacct.usage").read_text()) / 1e9
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_grade(course: Path, jobs: int) -> tuple[float, str]:
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    start, cpu = time.monotonic(), children_cpu()
    proc = subprocess.run(["make", "-C", str(course), "grade", f"J={jobs}", f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, env=env)
    CPU.append(children_cpu() - cpu)
    return time.monotonic() - start, proc.stdout + proc.stderr


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--keep", help="build the class in this folder and keep it")
    args = parser.parse_args(argv)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="normlab-bench-grading-"))
    course = work / "course"
    if course.exists():
        shutil.rmtree(course)
    COUNTER.append(cpu_counter())
    try:
        kinds = build_class(course, args.students)
        load_before = os.getloadavg()
        total, output = run_grade(course, args.jobs)
        load_after = os.getloadavg()
        again, output2 = run_grade(course, args.jobs)
        import grading_support as gs
        import nbformat
        changed = sorted(kinds)[:: max(1, len(kinds) // CHANGED)][:CHANGED]
        for student in changed:   # handed in again: one more line in the notebook
            path = course / "submitted" / student / gs.mx.ASSIGNMENT / gs.mx.NOTEBOOK
            nb = nbformat.read(path, as_version=4)
            nb.cells.append(nbformat.v4.new_markdown_cell(f"Handed in again by {student}."))
            nbformat.write(nb, path)
        rerun, output3 = run_grade(course, args.jobs)
        per = [json.loads(p.read_text())["seconds"] for p in (course / "logs" / "chapter23").glob("*.json")]
        phases = re.search(r"running and judging, with the gradebook records: ([\d.]+) s, feedback: ([\d.]+) s",
                           output)
        scores = {}
        for line in output.splitlines():
            m = re.match(r"^(s\d{3})\s+([\d.]*)\s+[\d.]+\s+(.*)$", line)
            if m:
                scores[m.group(1)] = (m.group(2), m.group(3))
        by_kind: dict = {}
        for student, kind in kinds.items():
            by_kind.setdefault(kind, set()).add(scores.get(student, ("?", "?"))[0])
        per.sort()
        result = {
            "students": args.students, "jobs": args.jobs, "total_s": round(total, 1),
            "per_submission_s": {"mean": round(statistics.mean(per), 3), "median": round(statistics.median(per), 3),
                                 "p95": round(per[int(0.95 * (len(per) - 1))], 3), "max": round(per[-1], 3)},
            "throughput_s_per_submission": round(total / args.students, 3),
            "cpu_s": round(CPU[0], 1), "cpu_s_per_submission": round(CPU[0] / args.students, 3),
            "unchanged_rerun_cpu_s": round(CPU[1], 1), "changed_rerun_cpu_s": round(CPU[2], 1),
            "cpu_counted_by": "cpuacct cgroup (sandboxes included)" if COUNTER[0][0] == "cgroup"
            else "rusage of the children (sandboxes not included)",
            "phases_s": {"running_and_judging": float(phases.group(1)) if phases else None,
                         "feedback": float(phases.group(2)) if phases else None},
            "unchanged_rerun_s": round(again, 1),
            "rerun_graded_nothing": "grading 0 (new or changed)" in output2,
            "changed_rerun_s": round(rerun, 1),
            "changed_rerun_graded": f"grading {len(changed)} (new or changed)" in output3,
            "scores_by_kind": {k: sorted(v) for k, v in sorted(by_kind.items())},
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in load_after],
            "cpus": os.cpu_count(),
            "goal": f"{args.students} submissions in {GOAL_SECONDS * args.students / 300:.0f} s",
            "met": total <= GOAL_SECONDS * args.students / 300,
        }
        pages = [float(m) for m in re.findall(r"^  feedback +\d+/\d+ \S+ +([\d.]+) s ", output, re.M)]
        result["feedback_pages"] = {"count": len(pages), "sum_s": round(sum(pages), 1),
                                    "mean_s": round(statistics.mean(pages), 3) if pages else None,
                                    "max_s": round(max(pages), 3) if pages else None}
        fb = result["phases_s"]["feedback"]
        result["feedback_share"] = round(fb / total, 3) if fb is not None else None
        result["feedback_met"] = fb is not None and fb <= FEEDBACK_SHARE * total
        result["changed_rerun_met"] = result["changed_rerun_graded"] and rerun <= RERUN_GOAL_SECONDS
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(result, indent=1))
        print(f"grading bench: {args.students} submissions, {args.jobs} workers, sandbox on")
        print(f"  total {total:.1f} s ({total / args.students:.2f} s per submission of the class); goal "
              f"{result['goal']}: {'MET' if result['met'] else 'MISS'}")
        print(f"  CPU {CPU[0]:.1f} s ({CPU[0] / args.students:.2f} CPU-s per submission; the unchanged re-run, the "
              f"fixed cost of a run, {CPU[1]:.1f} CPU-s; the re-run of {CHANGED} {CPU[2]:.1f} CPU-s), counted by "
              f"{result['cpu_counted_by']}")
        p = result["per_submission_s"]
        print(f"  per submission (sandbox run and judging, in a worker): mean {p['mean']} s, median {p['median']} s, "
              f"p95 {p['p95']} s, max {p['max']} s")
        print(f"  phases: running and judging {result['phases_s']['running_and_judging']} s, feedback "
              f"{result['phases_s']['feedback']} s; rerun with nothing changed {again:.1f} s "
              f"({'graded nothing' if result['rerun_graded_nothing'] else 'GRADED AGAIN'})")
        print(f"  feedback {result['feedback_share']:.0%} of the total (goal at most {FEEDBACK_SHARE:.0%}): "
              f"{'MET' if result['feedback_met'] else 'MISS'}" if result["feedback_share"] is not None else
              "  feedback phase: not reported")
        fp = result["feedback_pages"]
        print(f"  feedback pages: {fp['count']} written beside the grading, {fp['sum_s']} s of page time in all "
              f"(mean {fp['mean_s']} s, max {fp['max_s']} s; a page has its own time and memory limit)")
        print(f"  re-run after {len(changed)} submissions changed: {rerun:.1f} s "
              f"({'graded those ' + str(len(changed)) if result['changed_rerun_graded'] else 'GRADED OTHERS TOO'}); "
              f"goal {RERUN_GOAL_SECONDS:.0f} s: {'MET' if result['changed_rerun_met'] else 'MISS'}")
        print(f"  scores by kind: {result['scores_by_kind']}")
        print(f"  load average before {result['load_before']}, after {result['load_after']} ({os.cpu_count()} cores)")
        print(f"  written to {OUT.relative_to(ROOT)}")
        if "every submission was graded" not in output:
            print(output[-3000:])
        return 0
    finally:
        leave_counter(COUNTER[0])
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
