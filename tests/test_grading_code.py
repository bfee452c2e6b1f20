"""The grading code's own shape: one import direction, a fingerprint that sees every file, one wire format, a
protocol whose states can be read, and no check cell without a plan. No sandbox, no nbgrader run."""

from __future__ import annotations

import ast
import json
import shutil

import nbformat
import numpy as np
import pytest
from grading_support import COURSE, SOURCE, mx
from normlab_grading import decode, grade, hidden_checks, sandbox, wire

PACKAGE = COURSE / "normlab_grading"


def _imports(path) -> set[str]:
    """The modules of normlab_grading that a file imports, anywhere in it (functions included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "normlab_grading":
            if node.module == "normlab_grading":
                found |= {a.name for a in node.names}
            else:
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("normlab_grading.")}
    return found


def _graph() -> dict:
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    return {m: _imports(PACKAGE / f"{m}.py") & modules for m in modules}


def test_the_package_has_no_import_cycle():
    graph = _graph()
    assert graph["grade"] >= {"hidden_checks", "data", "sandbox"}   # the graph has edges to follow
    done, path = set(), []

    def visit(module):
        if module in path:
            raise AssertionError(f"import cycle: {' -> '.join(path[path.index(module):] + [module])}")
        if module in done:
            return
        path.append(module)
        for other in sorted(graph[module]):
            visit(other)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)
    # the cycle this replaced: hidden_checks -> grade (visible_data) -> hidden_checks
    assert "grade" not in graph["hidden_checks"] and "grade" not in graph["data"]


def test_the_sandbox_side_imports_only_the_wire_format():
    graph = _graph()
    assert graph["runner"] == {"wire"}
    assert graph["wire"] == set()
    assert set(sandbox.INSIDE_GRADING) == {"__init__.py", "wire.py"}
    # the judge side reads values only through the wire module's readers
    for module in ("decode", "judge", "plans"):
        assert "wire" in graph[module] or "decode" in graph[module]


def test_what_the_runner_describes_the_judge_reads_back():
    budget = [10**6]
    as_json = lambda value: json.loads(wire.encode_line(wire.describe(value, np, budget)))  # noqa: E731
    assert wire.flat(as_json(np.arange(6.0).reshape(2, 3))) == ([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], (2, 3))
    assert wire.flat(as_json([[1, 2.5], (np.float32(3.0), 4)])) == ([1.0, 2.5, 3.0, 4.0], (2, 2))
    assert wire.number(as_json(np.array(2.5))) == 2.5 and wire.number(as_json(True)) is None
    assert wire.whole(as_json(np.int64(7))) == 7 and wire.whole(as_json(7.0)) is None
    assert wire.items(as_json((1, 2)), 2) is not None and wire.items(as_json((1, 2, 3)), 2) is None
    with pytest.raises(decode.CheckFailed, match="ragged nested list"):
        decode.flatten(as_json([[1.0], [1.0, 2.0]]), "f")
    with pytest.raises(decode.CheckFailed, match="must be a real number, got str"):
        decode.real(as_json("1.0"), "f")
    # an input the grader writes is rebuilt unchanged in the sandbox
    spec = json.loads(wire.encode_line(wire.call("f", wire.arr([[1.0, 2.0]]), {"tuple": [1, 2]}, eps=0.5)))
    x = wire.make_value(spec["args"][0], np)
    assert x.shape == (1, 2) and x.dtype == np.float64 and spec["keep"] == [0]
    assert wire.make_value(spec["args"][1], np) == (1, 2) and spec["kwargs"] == {"eps": 0.5}


def test_a_new_module_changes_the_fingerprint(tmp_path):
    package = tmp_path / "normlab_grading"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    before = grade.grader_fingerprint(tmp_path, "chapter23", False, package=package)
    assert grade.grader_fingerprint(tmp_path, "chapter23", False, package=package) == before
    (package / "tolerances.py").write_text("LN_RTOL = 1e-7\n")
    added = grade.grader_fingerprint(tmp_path, "chapter23", False, package=package)
    assert added != before
    (package / "helpers").mkdir()
    (package / "helpers" / "more.py").write_text("X = 1\n")
    assert grade.grader_fingerprint(tmp_path, "chapter23", False, package=package) not in (before, added)
    assert {p.name for p in grade.grader_files(package)} >= {"tolerances.py", "more.py", "wire.py", "plans.py"}
    # and the files of the package itself are all counted, whatever they are called
    assert {p.name for p in grade.grader_files()} == {p.name for p in PACKAGE.rglob("*.py")
                                                     if "__pycache__" not in p.parts}


def _protocol(sent):
    limits = sandbox.Limits()
    request = wire.request([wire.group("test_a", 5.0, (), []), wire.group("test_b", 7.0, (), [])])
    return sandbox.Protocol([{"index": 1}, {"index": 4}], lambda records: request, limits, sent.append, 0.0)


def test_the_protocol_states_follow_the_records():
    sent = []
    p = _protocol(sent)
    assert p.state == p.STARTING and p.where == "starting Python in the sandbox"
    p.receive({"ready": True})
    assert (p.state, p.where) == (p.CELLS, "cell 1")
    p.receive({"cell": 1, "outputs": []})
    assert p.where == "cell 4"
    p.receive({"cell": 4, "outputs": []})
    p.receive({"cells-done": True})
    assert (p.state, p.where, p.current_limit()) == (p.GROUPS, "the check test_a", 5.0)
    assert [g["id"] for g in sent[0]["groups"]] == ["test_a", "test_b"]
    p.receive({"group": "test_a", "results": []})
    assert (p.where, p.current_limit()) == ("the check test_b", 7.0)
    p.receive({"group": "test_b", "results": []})
    p.receive({"end": True})
    assert p.state == p.DONE and list(p.cell_records) == [1, 4] and list(p.group_records) == ["test_a", "test_b"]
    with pytest.raises(sandbox.Tampered, match="after the end"):
        p.receive({"end": True})


@pytest.mark.parametrize("records, reason", [
    ([{"cell": 1, "outputs": []}], "before the runner started"),
    ([{"ready": True}, {"cell": 4, "outputs": []}], "unexpected cell record"),
    ([{"ready": True}, {"cell": 1, "outputs": []}, {"cells-done": True}], "announced early"),
    ([{"ready": True}, {"cell": 1, "outputs": []}, {"cell": 4, "outputs": []}, {"cells-done": True},
      {"group": "test_b", "results": []}], "unexpected check record"),
    ([{"ready": True}, [1, 2]], "not an object"),
])
def test_a_record_out_of_turn_is_tampering(records, reason):
    p = _protocol([])
    with pytest.raises(sandbox.Tampered, match=reason):
        for record in records:
            p.receive(record)


def _unplanned_source(tmp_path):
    nb = nbformat.read(SOURCE, as_version=4)
    checks = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    checks[-1].metadata["nbgrader"]["grade_id"] = "test_ex8_new"
    path = tmp_path / "exercises.ipynb"
    nbformat.write(nb, path)
    return nb, path


def test_a_check_cell_without_a_plan_stops_the_build(tmp_path, capsys):
    nb, path = _unplanned_source(tmp_path)
    with pytest.raises(SystemExit, match="test_ex8_new"):
        mx.require_plans(nb, "the test notebook")
    mx.require_plans(nbformat.read(SOURCE, as_version=4), "the source")   # the real one has a plan for each
    assert hidden_checks.main(["--check", str(path)]) == 1
    assert "test_ex8_new" in capsys.readouterr().out
    assert hidden_checks.main(["--check", str(SOURCE)]) == 0


def test_a_check_cell_without_a_plan_stops_grading(tmp_path, monkeypatch, capsys):
    _, path = _unplanned_source(tmp_path)
    course = tmp_path / "course"
    (course / "release" / "chapter23").mkdir(parents=True)
    shutil.copy2(COURSE / "nbgrader_config.py", course / "nbgrader_config.py")
    shutil.copy2(path, course / "release" / "chapter23" / "exercises.ipynb")
    (course / "submitted" / "alice" / "chapter23").mkdir(parents=True)
    shutil.copy2(path, course / "submitted" / "alice" / "chapter23" / "exercises.ipynb")
    monkeypatch.chdir(course)
    assert grade.main(["chapter23", "--unsafe-no-sandbox"]) == 2
    out = capsys.readouterr().out
    assert "test_ex8_new" in out and "Cannot grade" in out
    assert not (course / "logs" / "chapter23" / "alice.json").exists()   # nobody was graded


def _hidden_inputs(plans: dict) -> dict:
    return {gid: [c.request for c in plan.cases if c.hidden] for gid, plan in plans.items()}


def test_each_student_gets_hidden_inputs_of_their_own():
    from grading_support import GRADE_IDS, context, judge_namespace, namespace
    from normlab_grading import draws

    ctx = context()
    shared = hidden_checks.plans(ctx, GRADE_IDS)
    assert grade.student_plans(ctx, GRADE_IDS, None, "ada", shared) is shared   # no secret: one set for all
    assert draws.student_seed(ctx.seed, None, "ada") == ctx.seed
    ada = grade.student_plans(ctx, GRADE_IDS, "term secret", "ada", shared)
    ben = grade.student_plans(ctx, GRADE_IDS, "term secret", "ben", shared)
    again = grade.student_plans(ctx, GRADE_IDS, "term secret", "ada", shared)
    assert _hidden_inputs(ada) == _hidden_inputs(again)           # a re-grade sees the same inputs
    for gid in GRADE_IDS:
        # test_ex4_small's hidden cases are fixed sizes, and 8(b) asks for one count of the stored grid;
        # every other cell draws its inputs
        if gid not in ("test_ex4_small", "test_ex8_observed"):
            assert _hidden_inputs(ada)[gid] != _hidden_inputs(ben)[gid], gid
    assert _hidden_inputs(ada) != _hidden_inputs(shared)
    other = grade.student_plans(ctx, GRADE_IDS, "next term", "ada", shared)
    assert _hidden_inputs(other) != _hidden_inputs(ada)            # a new secret, new inputs
    # the visible cases are the notebook's own, the same for everyone
    visible = lambda plans: {g: [c.request for c in p.cases if not c.hidden] for g, p in plans.items()}  # noqa: E731
    assert visible(ada) == visible(ben) == visible(shared)
    # and correct answers keep full marks on every student's inputs
    ns = namespace()
    for student in ("ada", "ben", "cleo"):
        seed = draws.student_seed(ctx.seed, "term secret", student)
        verdicts = judge_namespace(ns, hidden_checks.Context(seed=seed, data=ctx.data), via_json=False)
        assert {g: v.message for g, v in verdicts.items() if not v.passed} == {}, student


def test_the_secret_comes_from_the_course_configuration():
    from traitlets.config import Config

    config = Config()
    assert grade.secret_from(config) is None
    config.NormlabGrading.student_secret = "s3cret"
    assert grade.secret_from(config) == "s3cret"
    assert "student_secret" not in vars(grade.limits_from(config))


def test_a_table_of_inputs_from_earlier_feedback_gains_nothing_on_the_next_hand_in():
    # A learning_rate that answers from a table of the inputs its earlier hand-in met (and their values), and
    # wrongly elsewhere, passes exercise 7 on those inputs; every hand-in draws its hidden inputs afresh (the
    # same files, the same inputs), so on the next one the table scores nothing. Fails while the hidden inputs
    # follow the course seed (and the secret) alone.
    from grading_support import context, judge_namespace, namespace
    from normlab_grading import draws

    ids = ["test_ex7_visible", "test_ex7_hidden"]
    ctx = context()
    earlier = hidden_checks.plans(ctx, ids)
    table = {tuple(c.request["args"]) for p in earlier.values() for c in p.cases}
    ns = namespace()
    honest = ns["learning_rate"]
    ns["learning_rate"] = lambda *args: honest(*args) if tuple(args) in table else 0.0
    assert all(v.passed for v in judge_namespace(ns, ctx, ids).values())
    seeds = {fp: draws.student_seed(ctx.seed, None, "ada", fp) for fp in ("hand-in 1", "hand-in 2")}
    assert seeds["hand-in 1"] != seeds["hand-in 2"] != ctx.seed
    assert seeds["hand-in 1"] == draws.student_seed(ctx.seed, None, "ada", "hand-in 1")   # a re-grade: the same
    fresh = hidden_checks.Context(seed=seeds["hand-in 2"], data=ctx.data)
    verdicts = judge_namespace(ns, fresh, ids)
    assert not any(v.passed for v in verdicts.values()), {g: v.message for g, v in verdicts.items()}
    assert all(v.passed for v in judge_namespace(namespace(), fresh, ids).values())
    shared = hidden_checks.plans(ctx, ids)
    assert grade.student_plans(ctx, ids, None, "ada", shared, "hand-in 2") is not shared
