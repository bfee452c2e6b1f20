"""Make git show and merge notebooks cell by cell with nbdime, in one repository (`make venv` runs it).

`.gitattributes` names the drivers for `*.ipynb`; this script defines them in the repository's own
`.git/config`, pointing at this checkout's `.venv/bin`, so `git diff` prints cells and outputs instead of JSON
and base64, and `git merge` joins notebook changes cell by cell. Outside a git repository it does nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def drivers(bin_dir: Path) -> dict[str, str]:
    """The git config entries of the notebook diff and merge drivers."""
    return {
        "diff.jupyternotebook.command": f"{bin_dir / 'git-nbdiffdriver'} diff --no-color",
        "merge.jupyternotebook.name": "nbdime: merge notebooks cell by cell",
        "merge.jupyternotebook.driver": f"{bin_dir / 'git-nbmergedriver'} merge %O %A %B %L %P",
    }


def configure(repo: Path, bin_dir: Path = BIN) -> bool:
    """Set the drivers in `repo`'s config; False (and nothing changed) when `repo` is not a git work tree.

    A venv inside the work tree is named by its path from the tree's top (git runs the drivers there): the config
    is shared by every `git worktree` of the repository, and each then uses its own `.venv`, not the one that
    happened to run this script last (an absolute path broke `git diff` in the others once that one was deleted)."""
    inside = subprocess.run(["git", "-C", str(repo), "rev-parse", "--is-inside-work-tree"],
                            capture_output=True, text=True)
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        return False
    top = Path(subprocess.run(["git", "-C", str(repo), "rev-parse", "--show-toplevel"], capture_output=True,
                              text=True, check=True).stdout.strip()).resolve()
    if bin_dir.resolve().is_relative_to(top):
        bin_dir = bin_dir.resolve().relative_to(top)
    for key, value in drivers(bin_dir).items():
        subprocess.run(["git", "-C", str(repo), "config", key, value], check=True)
    return True


def main() -> int:
    if configure(ROOT):
        print("git_notebooks: git diff and git merge now use nbdime for notebooks in this repository")
    else:
        print("git_notebooks: not a git work tree; notebook diffs stay plain JSON")
    return 0


if __name__ == "__main__":
    sys.exit(main())
