"""The package's imports run one way: formatting (how numbers are written) and canvas (the house style) at the
bottom, the interactive mechanism above them, the figures above it, display (what notebooks call) on top. Every
import statement of normlab_core counts, also those inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "normlab_core"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every normlab_core module that `path` names in an import statement (a package and, for `from package import
    name`, package.name too, which may be a module)."""
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
            target = ".".join(p for p in (base, node.module or "") if p)
            out |= {target} | {f"{target}.{a.name}" for a in node.names}
    return {m for m in out if m == "normlab_core" or m.startswith("normlab_core.")}


MODULES = {module_name(p): imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def reaches(names: set[str], layer: str) -> set[str]:
    return {n for n in names if n == layer or n.startswith(layer + ".")}


def test_the_walk_sees_the_imports_it_should():
    """The walk itself, on imports known to be there: a figure module takes explorables from interactive, display
    imports figures inside show(), and a relative import inside a subpackage resolves to its sibling."""
    assert "normlab_core.interactive" in MODULES["normlab_core.figures.s04_layer_norm"]
    assert "normlab_core.figures" in MODULES["normlab_core.display"]
    assert "normlab_core.interactive.controls" in MODULES["normlab_core.interactive.static"]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("normlab_core.interactive")))
def test_interactive_imports_neither_figures_nor_display(module):
    assert not reaches(MODULES[module], "normlab_core.figures") | reaches(MODULES[module], "normlab_core.display")


@pytest.mark.parametrize("module", ["normlab_core.formatting", "normlab_core.canvas"])
def test_the_bottom_layers_import_no_layer_above(module):
    above = {"normlab_core.figures", "normlab_core.interactive", "normlab_core.display"}
    assert not {n for layer in above for n in reaches(MODULES[module], layer)}
    if module == "normlab_core.formatting":
        assert not MODULES[module], "formatting imports nothing of normlab_core"


def test_only_display_defines_what_notebooks_show_with():
    """show and try_this have one home, display; interactive and figures do not pass them on."""
    import normlab_core.figures as figures
    import normlab_core.interactive as interactive
    from normlab_core import display

    assert display.show.__module__ == display.try_this.__module__ == "normlab_core.display"
    assert not any(hasattr(m, n) for m in (figures, interactive) for n in ("show", "try_this"))


def test_the_test_scheduler_names_only_test_files_that_exist():
    """tests/conftest.py deals tests to the workers by file name: a renamed or removed file must not linger there."""
    import conftest

    here = Path(__file__).resolve().parent
    named = set(conftest.GROUPS) | set(conftest.SPLIT) | set(conftest.FIRST) | set(conftest.BY_EXPLORABLE)
    missing = sorted(n for n in named if not (here / n).is_file())
    assert not missing, f"conftest.py schedules test files that do not exist: {missing}"


def test_every_test_file_has_an_area_and_the_quick_loop_names_real_files():
    """`pytest -m AREA` and `make check` (-m quick) select by tests/conftest.py's AREAS and QUICK: a new test file
    must match an area's pattern, and QUICK may name only files that exist (and have an area)."""
    import conftest

    here = Path(__file__).resolve().parent
    files = sorted(p.name for p in here.glob("test_*.py"))
    orphans = [f for f in files if conftest.area(f) is None]
    assert not orphans, f"add a pattern for {orphans} to AREAS in tests/conftest.py"
    gone = [f for f in conftest.QUICK if f not in files]
    assert not gone, f"tests/conftest.py QUICK names test files that do not exist: {gone}"
    assert conftest.area("test_grading_anything_new.py") == "grading"
    assert conftest.area("test_unclassified.py") is None
