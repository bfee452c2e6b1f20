"""Tools that succeed print nothing alarming: a kernel started by our tools logs no WARNING or ERROR lines.

ipykernel warns about TCP without encryption on every local kernel; `make venv` copies
lab-settings/ipython_kernel_config.json into .venv/etc/ipython to keep kernels to errors that matter.
Fix: `make venv` (or copy that file by hand).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_running_a_notebook_prints_no_kernel_warnings(tmp_path):
    script = textwrap.dedent(f"""
        import nbformat
        from pathlib import Path
        from scripts.refresh_notebooks import execute
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
        nb.metadata["kernelspec"] = {{"name": "python3", "display_name": "Python 3", "language": "python"}}
        execute(nb, Path({str(tmp_path)!r}))
        print(nb.cells[0].outputs[0]["text"], end="")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "42"
    alarming = [line for line in done.stderr.splitlines() if "WARNING |" in line or "ERROR |" in line]
    assert not alarming, (f"a notebook run printed {alarming}: run `make venv` to install "
                          "lab-settings/ipython_kernel_config.json")
