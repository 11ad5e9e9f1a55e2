"""Type check of the worker: mypy when it is installed; otherwise a structural check that every
function in troupe_worker has annotated parameters and return type (Debian's CI image has no mypy)."""

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def missing_annotations(path: Path) -> list[str]:
    problems = []
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        for a in args:
            if a.arg in ("self", "cls") or a.annotation is not None:
                continue
            problems.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.name}: parameter '{a.arg}' has no type")
        if node.returns is None and node.name != "__init__":
            problems.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.name}: no return type")
    return problems


def main() -> int:
    if importlib.util.find_spec("mypy") is not None:
        return subprocess.call([sys.executable, "-m", "mypy", "--ignore-missing-imports", "troupe_worker"], cwd=ROOT)
    problems = [p for f in sorted((ROOT / "troupe_worker").glob("*.py")) for p in missing_annotations(f)]
    for p in problems:
        print(p)
    print(f"typecheck (annotations; mypy not installed): {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
