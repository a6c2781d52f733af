"""The layer contracts in pyproject.toml ([tool.importlinter]) hold, and they bite: ``lint-imports`` passes on the
package as it is and fails on a copy of it with one import that runs the wrong way (or closes a cycle).

The copy is the real package and the real pyproject.toml, so a contract someone loosens or a layer someone drops
from the list shows up here as a wrong-way import that no longer fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    if LINT_IMPORTS is None:
        pytest.fail("lint-imports not found: import-linter is in the dev extra (pip install -e '.[dev]')")
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "200"}  # the copy's mast_otel; no wrapped lines
    return subprocess.run([LINT_IMPORTS, "--no-cache"], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip


def _copy(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "mast_otel", tree / "mast_otel", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


def test_the_package_keeps_its_contracts(tmp_path: Path) -> None:
    result = _lint_imports(_copy(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


# (file that gains the import, the import, a phrase of the contract it breaks)
WRONG_WAY = [
    ("judge/model.py", "import mast_otel.evaluation.suite", "Layers"),
    ("judge/rules.py", "from mast_otel.integrations import ag2", "The judge judges spans"),
    ("integrations/lifecycle.py", "import mast_otel.collector.service", "In-process code"),
    ("adapters/_tree.py", "import mast_otel.recorder", "know no framework"),
    ("spans.py", "import mast_otel.judge.model", "Layers"),
    ("judge/prepared.py", "from mast_otel.judge import merge", "No import cycles"),
    # the collector's stages: the store knows nothing of the receivers, a receiver nothing of the judge workers
    ("collector/store/verdicts.py", "import mast_otel.collector.receive.ingest", "The collector's stages"),
    ("collector/receive/auth.py", "import mast_otel.collector.judge.judging", "The collector's stages"),
    ("collector/release/annotations.py", "import mast_otel.collector.scaleout.routing", "The collector's stages"),
]


@pytest.mark.parametrize(("path", "line", "contract"), WRONG_WAY, ids=[w[0] + ":" + w[1] for w in WRONG_WAY])
def test_a_wrong_way_import_fails_the_check(tmp_path: Path, path: str, line: str, contract: str) -> None:
    tree = _copy(tmp_path)
    module = tree / "mast_otel" / path
    module.write_text(module.read_text(encoding="utf-8") + f"\n{line}  # noqa: E402,F401\n", encoding="utf-8")
    result = _lint_imports(tree)
    assert result.returncode != 0, result.stdout
    broken = [ln for ln in result.stdout.splitlines() if ln.rstrip().endswith("BROKEN")]
    assert broken, result.stdout
    assert contract in result.stdout.split("Broken contracts")[-1], result.stdout
