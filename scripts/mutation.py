"""Mutation testing of the modules whose output users rely on, with mutmut (run by ``nox -s mutation``).

    nox -s mutation                                  every module of [tool.mast-otel.mutation.modules]
    nox -s mutation -- mast_otel/redaction.py        one module (its key in that table)
    nox -s mutation -- --sample 36                   CI: a seeded sample across the modules; exit 1 under threshold

Each module is mutated in its own staging folder (``.mutation/<module>/``, a copy of the sources and tests with a
generated ``[tool.mutmut]``), so its mutmut run collects coverage from that module's tests only: a mutant costs
the few tests that call the mutated function, and one module's cache never invalidates another's. The score is
killed / (mutants - equivalents); a timeout counts as killed (a test noticed), a mutant no test reaches as
survived. Equivalent mutants are listed, one line each with the reason, in docs/mutation-equivalents.md.
Results: ``.mutation/scores.json`` and, per module, ``.mutation/<module>/survivors.txt`` (``mutmut show NAME``
in that folder prints a mutant's diff).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".mutation"
STAGED = ("mast_otel", "tests", "examples", "docs", "README.md", "benchmarks")  # what the tests read
CAUGHT = frozenset({"killed", "timeout", "caught by type check", "segfault"})
_EQUIVALENT = re.compile(r"^- `(?P<name>[\w.]+)`: (?P<why>\S.*)$")
# mutmut's own mutant generation, without the test run (the sample picks among the generated names first).
_GENERATE = (
    "from mutmut.__main__ import copy_also_copy_files, copy_src_dir, create_mutants\n"
    "copy_src_dir(); copy_also_copy_files(); create_mutants(1)\n"
)


@dataclass(frozen=True)
class Settings:
    modules: dict[str, list[str]]  # module path (or glob) -> the tests that exercise it
    threshold: float
    seed: int
    equivalents: Path
    pyproject: str  # the project's pyproject.toml, the base of each staging folder's


def settings() -> Settings:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    table = tomllib.loads(text)["tool"]["mast-otel"]["mutation"]
    return Settings(
        modules={k: list(v) for k, v in table["modules"].items()},
        threshold=float(table["threshold"]),
        seed=int(table["seed"]),
        equivalents=ROOT / table["equivalents"],
        pyproject=text,
    )


def slug(module: str) -> str:
    return re.sub(r"[^\w]+", "_", module.removesuffix(".py")).strip("_")


def equivalents(path: Path) -> dict[str, str]:
    """Mutant name -> why it is equivalent, from the ``- `name`: reason`` lines of the equivalents list."""
    if not path.is_file():
        return {}
    found = (_EQUIVALENT.match(line) for line in path.read_text(encoding="utf-8").splitlines())
    return {m["name"]: m["why"] for m in found if m}


_KEEP_DECORATED = frozenset({"staticmethod", "classmethod", "overload", "abstractmethod"})


def undecorated(source: str) -> str:
    """``source`` with each decorated function written as a plain ``def`` followed by ``name = deco(name)``.

    mutmut leaves every function with a decorator other than a lone ``staticmethod``/``classmethod`` unmutated
    (a decorator runs at definition time); the recorder's ``@guarded`` entry points and ``@contextmanager`` blocks
    would go unmeasured. The assignment applies the same decorators in the same order, so the module behaves the
    same. Left decorated: property setters (the plain ``def`` would hide the property they extend) and functions
    whose decorators include a descriptor mutmut itself handles or an ``overload``/``abstractmethod`` marker."""
    import libcst as cst

    def name_of(decorator: cst.Decorator) -> str:
        node = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        return node.attr.value if isinstance(node, cst.Attribute) else node.value if isinstance(node, cst.Name) else ""

    def movable(fn: cst.FunctionDef) -> bool:
        names = [name_of(d) for d in fn.decorators]
        return bool(names) and not any(n in _KEEP_DECORATED or n in ("setter", "getter", "deleter") for n in names)

    class Undecorate(cst.CSTTransformer):
        def _flatten(self, body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
            out: list[cst.BaseStatement] = []
            for statement in body:
                if isinstance(statement, cst.FunctionDef) and movable(statement):
                    call: cst.BaseExpression = cst.Name(statement.name.value)
                    for decorator in reversed(statement.decorators):
                        call = cst.Call(func=decorator.decorator, args=[cst.Arg(call)])
                    out.append(statement.with_changes(decorators=[]))
                    target = cst.AssignTarget(cst.Name(statement.name.value))
                    out.append(cst.SimpleStatementLine([cst.Assign(targets=[target], value=call)]))
                else:
                    out.append(statement)
            return out

        def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
            return updated.with_changes(body=self._flatten(updated.body))

        def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
            return updated.with_changes(body=self._flatten(updated.body))

    return cst.parse_module(source).visit(Undecorate()).code


def stage(modules: list[str], tests: list[str], config: Settings, folder: Path) -> Path:
    """``folder`` with fresh copies of the sources and tests (mtimes kept: mutmut regenerates only the files that
    changed) and a mutmut configuration that mutates ``modules`` and selects ``tests``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in STAGED:
        source, target = ROOT / name, folder / name
        if target.is_dir():
            shutil.rmtree(target)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif source.is_file():
            shutil.copy2(source, target)
    # The mutated module(s), decorators applied after the def. mutmut regenerates a file's mutants (and forgets
    # their results) when its mtime moves: a file staged as last time gets last time's mtime back.
    record_path = folder / "staged.json"
    record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.is_file() else {}
    for path in sorted({p for module in modules for p in folder.glob(module)}):
        text = undecorated(path.read_text(encoding="utf-8"))
        digest = hashlib.sha256(text.encode()).hexdigest()
        path.write_text(text, encoding="utf-8")
        key = path.relative_to(folder).as_posix()
        if key in record and record[key][0] == digest:
            os.utime(path, ns=(record[key][1], record[key][1]))
        record[key] = [digest, path.stat().st_mtime_ns]
    record_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    selection = [*tests, "-m", "not integration"]
    # The project's own pyproject.toml (pytest's options, the import contracts a test checks) and mutmut's section.
    (folder / "pyproject.toml").write_text(
        config.pyproject.rstrip("\n") + "\n\n[tool.mutmut]\n"
        'source_paths = ["mast_otel"]\n'
        f"only_mutate = {json.dumps(modules)}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(selection)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider"]\n'
        'also_copy = ["examples", "docs", "README.md", "benchmarks"]\n',
        encoding="utf-8",
    )
    return folder


def statuses(folder: Path, module: str) -> dict[str, str]:
    """Mutant name -> mutmut's status, for every mutant of the module generated in ``folder``."""
    from mutmut.stats import status_by_exit_code

    out: dict[str, str] = {}
    for meta in sorted((folder / "mutants").rglob("*.py.meta")):
        path = meta.relative_to(folder / "mutants").as_posix().removesuffix(".meta")
        if not fnmatch.fnmatch(path, module):
            continue
        codes = json.loads(meta.read_text(encoding="utf-8")).get("exit_code_by_key", {})
        out.update({name: status_by_exit_code[code] for name, code in codes.items()})
    return out


def mutmut(folder: Path, names: list[str], max_children: int) -> None:
    cmd = [str(Path(sys.executable).with_name("mutmut")), "run", "--max-children", str(max_children), *names]
    subprocess.run(cmd, cwd=folder, check=False)  # survivors make mutmut exit non-zero: the score decides


@dataclass
class Score:
    module: str
    caught: int
    counted: int
    equivalent: int
    survivors: list[str]

    @property
    def rate(self) -> float:
        return self.caught / self.counted if self.counted else 1.0


def score(module: str, found: dict[str, str], equivalent: dict[str, str]) -> Score:
    checked = {n: s for n, s in found.items() if s not in ("not checked", "skipped")}
    counted = {n: s for n, s in checked.items() if n not in equivalent}
    survivors = sorted(n for n, s in counted.items() if s not in CAUGHT)
    eq = sum(n in equivalent for n in checked)
    return Score(module, len(counted) - len(survivors), len(counted), eq, survivors)


def commit() -> str:
    run = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return run.stdout.strip() or "unknown"


def report(scores: list[Score], threshold: float) -> None:
    print(f"\nmutation score at {commit()} on {date.today()} (threshold {threshold:.0%})")
    print("| module | killed | counted | equivalent | score |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for s in scores:
        mark = "" if s.rate >= threshold else " (under)"
        print(f"| `{s.module}` | {s.caught} | {s.counted} | {s.equivalent} | {s.rate:.1%}{mark} |")


def full(modules: list[str], config: Settings, max_children: int) -> int:
    equivalent = equivalents(config.equivalents)
    scores = []
    for module in modules:
        folder = stage([module], config.modules[module], config, WORK / slug(module))
        mutmut(folder, [], max_children)  # new and changed mutants (mutmut keeps the results of the others)
        # mutmut keeps a survivor's result even after a test that kills it was added: check the survivors again
        again = [n for n, status in statuses(folder, module).items() if status not in CAUGHT and n not in equivalent]
        if again:
            mutmut(folder, again, max_children)
        s = score(module, statuses(folder, module), equivalent)
        (folder / "survivors.txt").write_text("".join(f"{n}\n" for n in s.survivors), encoding="utf-8")
        scores.append(s)
    WORK.mkdir(exist_ok=True)
    summary = {"commit": commit(), "date": str(date.today()), "threshold": config.threshold,
               "modules": {s.module: {"killed": s.caught, "counted": s.counted, "equivalent": s.equivalent,
                                      "survivors": s.survivors} for s in scores}}  # fmt: skip
    (WORK / "scores.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    report(scores, config.threshold)
    return 0 if all(s.rate >= config.threshold for s in scores) else 1


def _pytest(folder: Path, tests: list[str], mutant: str | None, timeout: float) -> tuple[int | None, float]:
    """One pytest run of ``tests`` in the module's generated ``mutants/`` tree with ``mutant`` switched on (None:
    the original code); (exit code or None on timeout, seconds). ``MUTANT_UNDER_TEST`` is how mutmut's trampolines
    pick the mutant, in this process and in any it starts."""
    env = {k: v for k, v in os.environ.items() if k != "MUTANT_UNDER_TEST"}
    env["PYTHONPATH"] = str(folder / "mutants")  # the mutated copy first, ahead of the editable install
    if mutant is not None:
        env["MUTANT_UNDER_TEST"] = mutant
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests, "-m", "not integration"]
    started = time.monotonic()
    try:
        done = subprocess.run(cmd, cwd=folder / "mutants", env=env, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - started
    return done.returncode, time.monotonic() - started


def sample(modules: list[str], n: int, seed: int, config: Settings) -> int:
    """``n`` mutants drawn with ``seed`` from every module's mutants (equivalents left out), each run against its
    module's tests directly (no coverage pass: a sample is a few mutants per module, and mutmut's coverage, clean
    and forced-fail passes would cost three full runs of each module's tests). Exit 1 when fewer than the
    threshold of them are killed, or when a module's tests fail with no mutant on."""
    equivalent = equivalents(config.equivalents)
    # One staging folder mutating every module: generating the mutants is one copy of the tree, not one a module.
    folder = WORK / "sample"
    generated = folder / "generated"  # written once mutmut's generation has finished
    if folder.is_dir() and not generated.is_file():
        # A generation stopped halfway leaves mutant files that the next one takes as done (their sources' mtimes
        # match the record): start the folder over.
        shutil.rmtree(folder)
    generated.unlink(missing_ok=True)
    stage(modules, [], config, folder)
    subprocess.run([sys.executable, "-c", _GENERATE], cwd=folder, check=True, capture_output=True)
    generated.touch()
    pool = [(module, name) for module in modules for name in sorted(statuses(folder, module)) if name not in equivalent]
    picked = sorted(random.Random(seed).sample(pool, min(n, len(pool))))
    scores = []
    for module in modules:
        names = [name for m, name in picked if m == module]
        if not names:
            continue
        tests = config.modules[module]
        code, clean = _pytest(folder, tests, None, timeout=1800)
        if code != 0:
            print(f"{module}: its tests fail with no mutant on (exit {code}); the sample cannot be scored")
            return 1
        found = {}
        for name in names:
            code, _ = _pytest(folder, tests, name, timeout=max(60.0, 5 * clean))
            found[name] = "survived" if code == 0 else "timeout" if code is None else "killed"
        scores.append(score(module, found, equivalent))
    report(scores, config.threshold)
    caught, counted = sum(s.caught for s in scores), sum(s.counted for s in scores)
    rate = caught / counted if counted else 0.0
    print(f"\nsample of {len(picked)} (seed {seed}): {caught} of {counted} killed ({rate:.1%})")
    for s in scores:
        for name in s.survivors:
            print(f"  survived: {name} (mutmut show {name}, in {folder.relative_to(ROOT)})")
    return 0 if counted and rate >= config.threshold else 1


def main(argv: list[str] | None = None) -> int:
    config = settings()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("modules", nargs="*", help="module paths as in [tool.mast-otel.mutation.modules]")
    parser.add_argument("--sample", type=int, default=0, help="run only this many mutants, drawn with --seed")
    parser.add_argument("--seed", type=int, default=config.seed)
    parser.add_argument("--max-children", type=int, default=1, help="parallel mutants (the machine is shared)")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in config.modules]
    if unknown:
        parser.error(f"not in [tool.mast-otel.mutation.modules]: {', '.join(unknown)}")
    modules = args.modules or list(config.modules)
    if args.sample:
        return sample(modules, args.sample, args.seed, config)
    return full(modules, config, args.max_children)


if __name__ == "__main__":
    sys.exit(main())
