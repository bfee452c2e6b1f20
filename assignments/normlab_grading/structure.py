"""Put a submission back into the shape of the release before it is run.

Students can delete, edit, move, duplicate or retype any cell of their copy. Before grading, the submission is
rebuilt in the release's order:

- every locked cell of the release (setup, data and check cells) is taken from the release, whatever the
  student did to it: deleted, edited, its metadata or type changed, moved (reported as *put back*);
- every answer cell keeps the student's text, with the release's metadata; an answer cell whose type was
  changed gets its type back (reported, and *marked for review*);
- an answer cell that is gone cannot be put back (its answer may sit in another cell): the submission is
  *marked for review* and graded as it is; a deleted written answer comes back empty, for the manual grade;
- a grade id used twice, or one the release does not know, is stripped: that cell counts as the student's
  own (marked for review);
- the student's own cells stay where they were, after the cell they followed.

Works on plain JSON dictionaries (nbformat 4), so a worker never imports nbformat or its validator.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re

CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")   # nbformat's pattern (an id lands in the HTML pages)
LOCKED_KEYS = ("grade", "solution", "locked", "points", "grade_id", "task")


@dataclasses.dataclass
class Restored:
    cells: list                                    # the rebuilt cells (nbformat 4 dictionaries)
    put_back: list = dataclasses.field(default_factory=list)   # what was restored from the release
    review: list = dataclasses.field(default_factory=list)     # what a person should look at


class Unreadable(ValueError):
    """The file is not a notebook this grader can read."""


_SURROGATE = re.compile("[\ud800-\udfff]")


class TooDeep(ValueError):
    """A value nested more deeply than allowed."""


def plain(value, max_depth: int | None = None):
    """`value` (JSON-like: dicts, lists, strings, numbers) with every lone surrogate replaced by U+FFFD, so that
    it can be written as UTF-8 (a JSON file may hold "\\udce9", which Python reads as an unpaired surrogate).
    Iterative, so that no nesting depth can exhaust the stack; deeper than `max_depth` raises TooDeep."""
    def fix(text: str) -> str:
        return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text

    if isinstance(value, str):
        return fix(value)
    root = [value]
    stack = [(root, 0, 0)]
    while stack:
        holder, key, depth = stack.pop()
        if max_depth is not None and depth > max_depth:
            raise TooDeep(f"nested more than {max_depth} levels deep")
        item = holder[key]
        if isinstance(item, str):
            holder[key] = fix(item)
        elif isinstance(item, list):
            stack.extend((item, i, depth + 1) for i in range(len(item)))
        elif isinstance(item, dict):
            if any(isinstance(k, str) and _SURROGATE.search(k) for k in item):
                fixed = {(fix(k) if isinstance(k, str) else k): v for k, v in item.items()}
                item.clear()
                item.update(fixed)
            stack.extend((item, k, depth + 1) for k in item)
    return root[0]


NOTEBOOK_BYTES = 20_000_000   # the largest notebook file read (nbgrader itself accepts 100 MB)
DEPTH = 64                    # the deepest nesting of values read (a notebook's own metadata is < 10 deep)


def load(path, max_bytes: int = NOTEBOOK_BYTES) -> dict:
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise Unreadable(f"cannot be read as a notebook ({type(exc).__name__}: {str(exc)[:200]})") from None
    if size > max_bytes:
        raise Unreadable(f"is {size:,} bytes, more than the {max_bytes:,} a notebook may have to be graded "
                         "(outputs saved in it count too: clear them and hand it in again)")
    try:
        with open(path, encoding="utf-8") as fh:
            nb = plain(json.load(fh), max_depth=DEPTH)
    except RecursionError:
        raise Unreadable(f"holds values nested too deeply to read (at most {DEPTH} levels are allowed)") from None
    except TooDeep:
        raise Unreadable(f"holds values (in its metadata or outputs) nested more than {DEPTH} levels deep; "
                         f"at most {DEPTH} are allowed") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise Unreadable(f"cannot be read as a notebook ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list) or nb.get("nbformat") != 4:
        raise Unreadable("is not a Jupyter notebook in format 4")
    for cell in nb["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise Unreadable("has a cell that is not a code, markdown or raw cell")
        source = cell.get("source", "")
        if isinstance(source, list):
            if not all(isinstance(s, str) for s in source):
                raise Unreadable("has a cell whose source is not text")
            cell["source"] = "".join(source)
        elif not isinstance(source, str):
            raise Unreadable("has a cell whose source is not text")
        if not isinstance(cell.get("metadata", {}), dict):
            raise Unreadable("has a cell whose metadata is not a dictionary")
    return nb


def nbgrader_meta(cell: dict) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def grade_id(cell: dict):
    gid = nbgrader_meta(cell).get("grade_id")
    return gid if isinstance(gid, str) else None


def is_locked(cell: dict) -> bool:
    meta = nbgrader_meta(cell)
    return bool(meta.get("locked")) and not meta.get("solution")


def is_check(cell: dict) -> bool:
    meta = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def _describe(cell: dict) -> str:
    return "check cell" if is_check(cell) else "locked cell"


def _fresh(cell: dict) -> dict:
    out = copy.deepcopy(cell)
    if out.get("cell_type") == "code":
        out["outputs"] = []
        out["execution_count"] = None
    return out


def _as_student_cell(cell: dict) -> dict:
    out = copy.deepcopy(cell)
    out.setdefault("metadata", {}).pop("nbgrader", None)
    return out


def restore(submitted: dict, release: dict) -> Restored:
    rel_cells = release["cells"]
    rel_ids = [grade_id(c) for c in rel_cells]
    by_id = {gid: c for gid, c in zip(rel_ids, rel_cells, strict=True) if gid}
    out = Restored(cells=[])

    # Match the submission's cells to the release by grade id; everything else is the student's own.
    matched: dict = {}
    anchors: dict = {None: []}   # grade id of the identified cell a free cell follows -> free cells
    last = None
    order = []
    for cell in submitted["cells"]:
        gid = grade_id(cell)
        if gid is not None and gid in by_id and gid not in matched:
            matched[gid] = cell
            order.append(gid)
            last = gid
            anchors.setdefault(gid, [])
            continue
        if gid is not None:
            why = "is used by two cells" if gid in matched else "is not in the release"
            out.review.append(f"the grade id {gid!r} {why}: that cell was graded as one of your own cells")
            cell = _as_student_cell(cell)
        anchors.setdefault(last, []).append(cell)

    release_order = [g for g in rel_ids if g in matched]
    if order != release_order:
        out.put_back.append("cells were moved: the release's order was restored")

    out.cells.extend(_fresh(c) if c.get("cell_type") == "code" else c for c in anchors[None])
    for gid, rel in zip(rel_ids, rel_cells, strict=True):
        if gid is None:
            continue
        mine = matched.get(gid)
        if is_locked(rel) or (nbgrader_meta(rel).get("grade") and not nbgrader_meta(rel).get("solution")):
            if mine is None:
                out.put_back.append(f"{_describe(rel)} {gid} was deleted: put back from the release")
            elif (mine.get("cell_type") != rel.get("cell_type") or mine.get("source") != rel.get("source")
                  or any(nbgrader_meta(mine).get(k) != nbgrader_meta(rel).get(k) for k in LOCKED_KEYS)):
                out.put_back.append(f"{_describe(rel)} {gid} was changed: put back from the release")
            cell = _fresh(rel)
            if mine is not None and mine.get("id"):
                cell["id"] = mine["id"]
            out.cells.append(cell)
        elif mine is None:
            if rel.get("cell_type") == "markdown":
                out.cells.append(_fresh(rel))
                out.review.append(f"the written answer {gid} was deleted: put back empty, for the manual grade")
            else:
                out.review.append(f"the answer cell {gid} is missing (deleted, or its nbgrader metadata removed): "
                                  "its answer may be in another cell; graded as it is")
        else:
            cell = _fresh(mine) if rel.get("cell_type") == "code" else copy.deepcopy(mine)
            cell["metadata"] = dict(cell.get("metadata", {}))
            cell["metadata"]["nbgrader"] = copy.deepcopy(nbgrader_meta(rel))
            if mine.get("cell_type") != rel.get("cell_type"):
                out.review.append(f"the answer cell {gid} was turned into a {mine.get('cell_type')} cell: "
                                  f"turned back into a {rel.get('cell_type')} cell")
                cell["cell_type"] = rel["cell_type"]
                if rel["cell_type"] == "code":
                    cell["outputs"], cell["execution_count"] = [], None
                else:
                    cell.pop("outputs", None)
                    cell.pop("execution_count", None)
            elif any(nbgrader_meta(mine).get(k) != nbgrader_meta(rel).get(k) for k in LOCKED_KEYS):
                out.put_back.append(f"the nbgrader metadata of answer cell {gid} was changed: put back")
            out.cells.append(cell)
        out.cells.extend(_fresh(c) if c.get("cell_type") == "code" else c for c in anchors.get(gid, []))

    seen = set()
    for n, cell in enumerate(out.cells):
        if not isinstance(cell.get("id"), str) or cell["id"] in seen or not CELL_ID.match(cell["id"]):
            cell["id"] = f"cell-{n}"
        seen.add(cell["id"])
    return out
