"""``releaselib.edit`` is text -> text: no module of it touches the file system."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EDIT = Path(__file__).resolve().parents[2] / "releaselib" / "edit"
FILE_SYSTEM = {"os", "shutil", "pathlib", "glob", "tempfile", "io"}


@pytest.mark.parametrize("module", sorted(p.name for p in EDIT.glob("*.py")))
def test_an_edit_module_neither_imports_nor_opens_the_file_system(module: str) -> None:
    tree = ast.parse((EDIT / module).read_text(encoding="utf-8"))
    imported = {
        name.split(".")[0]
        for node in ast.walk(tree)
        for name in (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and not node.level
            else []
        )
    }
    opens = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open"
    ]
    assert imported & FILE_SYSTEM == set() and opens == []
