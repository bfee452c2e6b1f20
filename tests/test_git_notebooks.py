"""Notebook diffs a reviewer can read: `git diff` shows cells and outputs, not the JSON (nbdime drivers).

Fix: `make venv` (it runs scripts/git_notebooks.py); the drivers are named in .gitattributes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import git_notebooks

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
NOTEBOOK = ROOT / "notebooks" / "03_mean_and_variance.ipynb"

pytestmark = pytest.mark.skipif(not (BIN / "git-nbdiffdriver").exists(),
                                reason="nbdime is not installed in this environment: run `make venv`")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout


def stream_cell(nb: dict) -> tuple[int, dict]:
    """(index, output) of the first code cell that prints text."""
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and "".join(out["text"]).strip():
                return i, out
    raise AssertionError(f"{NOTEBOOK.name} prints nothing; pick a notebook that does")


@pytest.fixture
def repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copy(ROOT / ".gitattributes", tmp_path / ".gitattributes")
    shutil.copy(NOTEBOOK, tmp_path / "page.ipynb")
    assert git_notebooks.configure(tmp_path, BIN)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "start")
    return tmp_path


def test_a_changed_sentence_and_printout_show_as_cells_not_json(repo):
    nb = json.loads((repo / "page.ipynb").read_text())
    index, out = stream_cell(nb)
    out["text"] = ["a printout that changed: 12345.678\n"]
    nb["cells"][0]["source"] = ["# A new title\n"]
    (repo / "page.ipynb").write_text(json.dumps(nb, indent=1))

    diff = git(repo, "diff")
    assert "## modified /cells/0/source" in diff, diff[:2000]
    assert f"/cells/{index}/outputs" in diff, diff[:2000]
    assert "+# A new title" in diff and "12345.678" in diff
    assert '"cell_type"' not in diff and '"outputs": [' not in diff, "git diff prints the notebook's JSON"
    assert len(diff) < 20_000, f"a two-cell change gave a {len(diff)}-character diff"


def test_outside_a_work_tree_nothing_is_configured(tmp_path):
    assert git_notebooks.configure(tmp_path, BIN) is False


def test_the_repository_names_the_drivers_for_every_notebook():
    attributes = (ROOT / ".gitattributes").read_text()
    assert "*.ipynb diff=jupyternotebook merge=jupyternotebook" in attributes


def test_a_venv_inside_the_tree_is_named_relatively_so_each_worktree_uses_its_own(tmp_path):
    """`git worktree`s share one config. With an absolute path, deleting the worktree whose .venv ran the script
    broke `git diff` of notebooks everywhere ("git-nbdiffdriver: not found"); a path from the tree's top does not."""
    main = tmp_path / "main"
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    shutil.copy(ROOT / ".gitattributes", main / ".gitattributes")
    shutil.copy(NOTEBOOK, main / "page.ipynb")
    (main / ".gitignore").write_text(".venv/\n")

    def venv(tree: Path) -> Path:
        bin_dir = tree / ".venv" / "bin"
        bin_dir.mkdir(parents=True)
        for tool in ("git-nbdiffdriver", "git-nbmergedriver"):
            (bin_dir / tool).symlink_to(BIN / tool)
        return bin_dir

    assert git_notebooks.configure(main, venv(main))
    assert git(main, "config", "diff.jupyternotebook.command").startswith(".venv/bin/git-nbdiffdriver ")
    git(main, "add", ".")
    git(main, "commit", "-qm", "start")
    other = tmp_path / "other"
    git(main, "worktree", "add", "-q", str(other))
    venv(other)
    shutil.rmtree(main / ".venv")                  # the first checkout's venv is gone
    nb = json.loads((other / "page.ipynb").read_text())
    nb["cells"][0]["source"] = ["# A new title\n"]
    (other / "page.ipynb").write_text(json.dumps(nb, indent=1))
    assert "## modified /cells/0/source" in git(other, "diff")
