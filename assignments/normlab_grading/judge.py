"""Judging: the verdict on every check cell from the plain data its calls returned in the sandbox.

`plans` builds the plans of a notebook's check cells (`plans.CHECKS`), `request` is what the sandbox is asked
to run after the cells, and `judge` decides one check cell from its group record. Nothing the student's code
prints, patches or fakes in its kernel reaches a verdict: only the described values (`wire`), read by
`decode` and compared with references the sandbox never sees.
"""

from __future__ import annotations

import dataclasses
import math

from normlab_grading import wire
from normlab_grading.decode import CheckFailed, flatten, hidden_case
from normlab_grading.plans import CHECKS, Context, Plan


@dataclasses.dataclass
class Verdict:
    grade_id: str
    passed: bool
    message: str
    timed_out: bool = False


def plans(ctx: Context, grade_ids) -> dict:
    """{grade id: Plan} for the check cells of a notebook that this module knows."""
    return {gid: CHECKS[gid](ctx) for gid in grade_ids if gid in CHECKS}


def request(plans_by_id: dict, budget: float) -> dict:
    """What the sandbox is asked to run after the cells, in the order of the check cells."""
    return wire.request([wire.group(gid, budget, p.tripwire, p.calls()) for gid, p in plans_by_id.items()])


def _calls_of(plan: Plan) -> str:
    names = sorted({c.request.get("call") or c.request.get("get") for c in plan.cases})
    return ", ".join(names)


def _unchanged(request: dict, result: dict, part: str) -> None:
    """Fails unless every array the call passed is, after the call, what it was before (NaN equal to NaN)."""
    if "call" not in request or "missing" in result or "notcallable" in result:
        return
    after = result.get("args_after")
    for i in request.get("keep", []):
        spec = request["args"][i]
        if not isinstance(spec, dict) or "array" not in spec:
            continue
        desc = after.get(str(i)) if isinstance(after, dict) else None
        try:
            values, shape = flatten(desc, "x") if isinstance(desc, dict) else (None, None)
        except CheckFailed:
            values, shape = None, None
        want = [float(v) for v in spec["array"]]
        same = values is not None and tuple(shape) == tuple(spec["shape"]) and all(
            a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(values, want, strict=True))
        if not same:
            raise CheckFailed(f"{part}: {request['call']} changed its argument {i + 1} in place (the caller's "
                              "array); a function must leave its inputs as they were: work on a copy")


def _core_name(name, plan: Plan) -> str:
    """The tripwire's report of which normlab_core function was called, if it names one of the modules tripped
    for this plan and a function that exists there, or a function of the package itself (the graded copy's
    stubs report names such as `rms_norm_backward`); the sandbox could send any text."""
    import importlib

    parts = name.split(".") if isinstance(name, str) and len(name) < 100 else []
    top = len(parts) == 1 and bool(plan.tripwire)
    if (len(parts) >= 2 and parts[0] in plan.tripwire) or top:
        try:
            obj = importlib.import_module("normlab_core" if top else f"normlab_core.{parts[0]}")
            for attr in parts[0 if top else 1:]:
                obj = getattr(obj, attr) if attr.isidentifier() and not attr.startswith("__") else None
            if callable(obj):
                return f"normlab_core.{name}"
        except Exception:  # noqa: BLE001, S110 - not a name of normlab_core: said in general terms below
            pass
    return "a function of normlab_core"


def judge(plan: Plan, record: dict | None, budget: float) -> Verdict:
    """The verdict on one check cell from what its group of calls returned (None: it never ran)."""
    gid, part = plan.grade_id, plan.part
    if record is None:
        return Verdict(gid, False, f"{part}: the checks of this cell did not run (the notebook stopped before them)")
    results = record.get("results")
    if not isinstance(results, list):
        return Verdict(gid, False, f"{part}: the grader received no results for this cell")
    tripped = record.get("tripped") or []
    if tripped:
        return Verdict(gid, False, f"{part} calls normlab_core's own implementation ({_core_name(tripped[0], plan)}); "
                       "this part asks you to write the computation yourself, so it scores 0. Replace the call with "
                       "your own code.")
    try:
        hidden_seen = 0
        for case, result in zip(plan.cases, results, strict=False):
            if not isinstance(result, dict):
                raise CheckFailed(f"{part}: the grader could not read a result")
            hidden_seen += bool(case.hidden)
            try:
                with hidden_case(case.hidden):
                    _unchanged(case.request, result, part)
                    case.verify(result)
            except CheckFailed as exc:
                if case.hidden and "hidden" not in str(exc):   # say which case it was, by its number
                    raise CheckFailed(f"{exc} (hidden case {hidden_seen} of {plan.counts()[1]})") from None
                raise
    except CheckFailed as exc:
        message = str(exc)
        return Verdict(gid, False, message if message.startswith(part) else f"{part}: {message}")
    except Exception as exc:  # noqa: BLE001 - malformed data from the sandbox fails the check, never the grader
        return Verdict(gid, False, f"{part}: the grader could not read what your notebook returned "
                       f"({type(exc).__name__})")
    total = len(plan.cases)
    done = len(results)
    if record.get("stopped") or done < total:
        elapsed = float(record.get("elapsed") or 0.0)
        each = f", about {elapsed / done:.1f} s each" if done else ""
        return Verdict(gid, False, f"{part}: time limit reached in the check cell {gid}. Its checks call "
                       f"{_calls_of(plan)} {total} times, with a limit of {budget:g} s for all of them together; "
                       f"{done} of the {total} calls finished in {elapsed:.1f} s{each}. Make your function faster "
                       "(for instance, no Python loop over rows or entries where NumPy can do the work).",
                       timed_out=True)
    visible, hidden = plan.counts()
    return Verdict(gid, True, f"{part}: {visible} visible and {hidden} hidden cases passed" if hidden
                   else f"{part}: {visible} cases passed")
