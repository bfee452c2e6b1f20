"""The plain data that crosses the sandbox's boundary, defined once for both sides.

The grader (`judge`, `plans`, `sandbox`) and the runner inside the sandbox (`runner`) both import this module;
it is bound read-only into the sandbox beside the runner, so it holds nothing worth reading: no reference, no
expected value, no seed. It needs only the standard library (NumPy is passed in where values are built).

Three kinds of data cross:

- **lines**: one JSON record per line, UTF-8, NaN and infinities allowed (`encode_line`, `decode_line`);
- **inputs** (grader to sandbox): an array is `{"array": flat values, "shape": [...]}` (`arr`), one of the
  runner's fixed functions `{"function": name}`, a tuple `{"tuple": [...]}`, lists and plain JSON values as they
  are; a call is `{"call": name, "args": [...], "kwargs": {...}}` with optional `keep` (the argument indices
  sent back after the call) and `replace` (names of the student's functions to spoil for this call, and the
  factor); a read of a name is `{"get": name}` (`call`, `get`). The runner rebuilds inputs with `make_value`;
- **values** (sandbox to grader): what a call returned, described by `describe` as a dict with a type tag
  `t` (`int`, `float`, `bool`, `str`, `none`, `ndarray`, `npscalar`, `tuple`, `list`, `function`, `object`,
  `deep`, `toolarge`) and the fields of that type; `cls` names a class other than the built-in one. The
  grader reads them back with `kind`, `number`, `whole`, `items` and `flat`, and nothing else reads them.

After the cells, the grader sends one `request` of `group`s (one per check cell); the runner answers each
with a `group_record`. A call's result is `{"value": ...}`, `{"error": {"type", "message"}}`, `{"missing": name}` or
`{"notcallable": ...}`, with `args_after` (index -> value) for the kept arguments.
"""

from __future__ import annotations

import json
import types

# References taken when the runner starts, before any student code runs (the student can rebind attributes
# of these modules and types later, not these names).
_dumps = json.dumps
_loads = json.loads
_INT, _FLOAT, _STR, _BOOL, _TUPLE, _LIST, _DICT = int, float, str, bool, tuple, list, dict
_int_value = int.__int__
_float_value = float.__float__
_str_value = str.__str__
_tuple_len, _tuple_item = tuple.__len__, tuple.__getitem__
_list_len, _list_item = list.__len__, list.__getitem__
_type = type
_isinstance = isinstance

MAX_ITEMS = 2_000_000  # numbers described per returned value; larger answers are reported as too large
MAX_DEPTH = 6          # levels of nesting described; deeper values are reported as "deep"


# --- lines ---------------------------------------------------------------------------------------------------

def encode_line(record) -> bytes:
    """One record as a line of JSON (a lone surrogate is written as its escape, never an encoding error)."""
    return (_dumps(record, allow_nan=True, separators=(",", ":")) + "\n").encode("utf-8", "backslashreplace")


def decode_line(line: bytes):
    """The record of one line (ValueError if it is not JSON, RecursionError if nested too deeply)."""
    return _loads(line.decode("utf-8") if _isinstance(line, (bytes, bytearray)) else line)


# --- inputs: written by the grader, rebuilt in the sandbox -------------------------------------------------

def arr(values, shape=None) -> dict:
    """An input array, as plain data (the sandbox rebuilds it as a float64 NumPy array)."""
    import numpy as np

    flat = np.asarray(values, dtype=np.float64)
    shape = list(flat.shape) if shape is None else list(shape)
    return {"array": flat.reshape(-1).tolist(), "shape": shape}


def call(fn: str, *args, keep=(), replace=None, **kwargs) -> dict:
    """A call of the student's `fn`; every array argument is sent back after the call too, so that a function
    that changes its caller's arrays in place is caught on every call (`judge`)."""
    out = {"call": fn, "args": list(args), "kwargs": kwargs}
    keep = sorted(set(keep) | {i for i, a in enumerate(args) if isinstance(a, dict) and "array" in a})
    if keep:
        out["keep"] = list(keep)
    if replace:
        out["replace"] = replace
    return out


def get(name: str) -> dict:
    """A read of the value the notebook bound to `name`."""
    return {"get": name}


def is_array(spec) -> bool:
    return isinstance(spec, dict) and "array" in spec


FUNCTIONS = {   # the functions an input may name, by name (the grader knows their derivatives)
    "sin": lambda np: (lambda v: np.sin(v)),
    "square": lambda np: (lambda v: v * v),
    "cube": lambda np: (lambda v: v * v * v),
    "scaled": lambda np: (lambda v: v * (v * v).sum()),
}


def make_value(spec, np):
    """An input from the grader's plain-data description."""
    if _isinstance(spec, _DICT):
        if "array" in spec:
            return np.array(spec["array"], dtype=np.float64).reshape(spec["shape"])
        if "function" in spec:
            return FUNCTIONS[spec["function"]](np)
        if "tuple" in spec:
            return _TUPLE(make_value(v, np) for v in spec["tuple"])
        raise ValueError(f"unknown input {spec!r}")
    if _isinstance(spec, _LIST):
        return [make_value(v, np) for v in spec]
    return spec


# --- the request after the cells, and the record of each group -------------------------------------------

def group(gid: str, budget: float, tripwire, calls: list) -> dict:
    """The calls of one check cell: made in order, within `budget` seconds together, with the normlab_core
    modules named in `tripwire` tripped while they run."""
    return {"id": gid, "budget": budget, "tripwire": list(tripwire), "calls": calls}


def request(groups: list) -> dict:
    """What the sandbox is asked to run once the cells have run: the groups, in the order of the check cells."""
    return {"groups": groups}


def group_record(gid: str, results: list, tripped: list, stopped: bool, total: int, elapsed: float,
                 printed: int) -> dict:
    """What the runner sends back for one group: a result per call made (fewer than `total` if `stopped`)."""
    return {"group": gid, "results": results, "tripped": tripped, "stopped": stopped, "finished": len(results),
            "total": total, "elapsed": round(elapsed, 3), "printed": printed}


# --- values: described in the sandbox, read by the grader ---------------------------------------------------

def _qualname(t) -> str:
    return f"{getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', getattr(t, '__name__', '?'))}"


def describe(value, np, budget: list, depth: int = 0):
    """`value` as JSON-ready plain data, reading it through the built-in types' own methods."""
    t = _type(value)
    if depth > MAX_DEPTH:
        return {"t": "deep"}
    if value is None:
        return {"t": "none"}
    if t is _BOOL:
        return {"t": "bool", "v": value is True}
    if _isinstance(value, _INT):
        out = {"t": "int", "v": _int_value(value)}
    elif _isinstance(value, _FLOAT):
        out = {"t": "float", "v": _float_value(value)}
    elif _isinstance(value, _STR):
        out = {"t": "str", "v": _str_value(value)[:2000]}
    elif np is not None and _isinstance(value, np.ndarray):
        arr_ = np.ndarray.view(value, np.ndarray)
        out = {"t": "ndarray", "dtype": _STR(arr_.dtype), "shape": [_int_value(n) for n in arr_.shape]}
        if arr_.size > budget[0]:
            return {"t": "toolarge", "size": _int_value(arr_.size)}
        budget[0] -= arr_.size
        if arr_.dtype.kind in "biuf":
            out["data"] = np.ndarray.tolist(np.ndarray.ravel(np.ndarray.astype(arr_, np.float64)))
        elif arr_.dtype.kind == "O":
            out["items"] = [describe(v, np, budget, depth + 1) for v in np.ndarray.tolist(np.ndarray.ravel(arr_))]
    elif np is not None and _isinstance(value, np.generic):
        dtype = np.dtype(t)
        out = {"t": "npscalar", "dtype": _STR(dtype)}
        if dtype.kind in "biu":
            out["v"] = _int_value(np.ndarray.item(np.asarray(value).reshape(())))
        elif dtype.kind == "f":
            out["v"] = _float_value(np.ndarray.item(np.asarray(value, dtype=np.float64).reshape(())))
    elif _isinstance(value, _TUPLE):
        n = _tuple_len(value)
        items_ = [describe(_tuple_item(value, i), np, budget, depth + 1) for i in range(min(n, 64))]
        out = {"t": "tuple", "items": items_, "len": n}
    elif _isinstance(value, _LIST):
        n = _list_len(value)
        if n > budget[0]:
            return {"t": "toolarge", "size": n}
        budget[0] -= n
        out = {"t": "list", "items": [describe(_list_item(value, i), np, budget, depth + 1) for i in range(n)]}
    elif _isinstance(value, types.FunctionType):
        out = {"t": "function"}
    else:
        out = {"t": "object"}
    if t.__module__ != "builtins" or out["t"] == "object":
        out["cls"] = _qualname(t)
    return out


_COARSE = {"int": "an int", "float": "a float", "bool": "a bool", "str": "a string", "none": "None",
           "tuple": "a tuple", "list": "a list", "function": "a function", "ndarray": "a NumPy array",
           "npscalar": "a NumPy scalar"}


def kind(desc: dict, coarse: bool = False) -> str:
    """The type of a described value in words; `coarse`: without the class, dtype or shape the code chose."""
    t = desc.get("t")
    if coarse:
        return _COARSE.get(t, "an object of another type") if "cls" not in desc or t in ("ndarray", "npscalar") \
            else "an object of a class of its own"
    if t in ("int", "float", "bool", "str", "none", "tuple", "list", "function"):
        return {"none": "None", "function": "a function"}.get(t, t) if "cls" not in desc else desc["cls"]
    if t == "ndarray":
        return f"a NumPy array of dtype {desc.get('dtype')}"
    if t == "npscalar":
        return f"numpy.{desc.get('dtype')}"
    return desc.get("cls", t or "?")


def number(desc: dict) -> float | None:
    """Any real scalar: int, float (or a subclass, read as the built-in value), a NumPy integer or float
    scalar, a 0-d real array. Not bool, not complex, not a string (None for those)."""
    t = desc.get("t")
    if t in ("int", "float") and isinstance(desc.get("v"), (int, float)):
        return float(desc["v"])
    if t == "npscalar" and isinstance(desc.get("v"), (int, float)) and desc.get("dtype") != "bool":
        return float(desc["v"])
    if t == "ndarray" and desc.get("shape") == [] and desc.get("dtype", "").startswith(("float", "int", "uint")):
        return float(desc["data"][0])
    return None


def whole(desc: dict) -> int | None:
    """An integer: int (or a subclass, read as the built-in value) or a NumPy integer scalar; not a float."""
    t = desc.get("t")
    if t == "int" and isinstance(desc.get("v"), int):
        return int(desc["v"])
    if t == "npscalar" and isinstance(desc.get("v"), int) and desc.get("dtype", "").startswith(("int", "uint")):
        return int(desc["v"])
    return None


def items(desc: dict, n: int) -> list | None:
    """The described items of a tuple or list of exactly n items (None otherwise)."""
    got = desc.get("items", [])
    if desc.get("t") not in ("tuple", "list") or len(got) != n or desc.get("len", n) != n:
        return None
    return got


class NotNumbers(ValueError):
    """A described value that is not an array-like of real numbers; `template` says why, with {what} (the
    name of the call) and {kind} (the type of `desc`, the part at fault) to fill in."""

    def __init__(self, template: str, desc: dict):
        super().__init__(template)
        self.template, self.desc = template, desc


def flat(desc: dict):
    """(flat list of floats, shape) of an array-like of real numbers; raises NotNumbers."""
    t = desc.get("t")
    if t == "ndarray":
        if desc.get("data") is None or desc.get("dtype") == "bool":
            raise NotNumbers("{what} must return real numbers, got {kind}", desc)
        return [float(v) for v in desc["data"]], tuple(desc["shape"])
    if t in ("list", "tuple"):
        got = desc.get("items", [])
        if t == "tuple" and desc.get("len", len(got)) != len(got):
            raise NotNumbers("{what} returned a tuple that is too long", desc)
        if not got:
            return [], (0,)
        parts = [flat(item) for item in got]
        inner = {p[1] for p in parts}
        if len(inner) != 1:
            raise NotNumbers("{what} returned a ragged nested list", desc)
        values = [v for p in parts for v in p[0]]
        return values, (len(got), *parts[0][1])
    if t not in ("int", "float", "npscalar"):
        raise NotNumbers("{what} must be an array of numbers, got {kind}", desc)
    value = number(desc)
    if value is None:
        raise NotNumbers("{what} must be a real number, got {kind}", desc)
    return [value], ()
