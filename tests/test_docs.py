"""The READMEs' operator tables list exactly the discovered ops."""

from __future__ import annotations

from pathlib import Path

import pytest

from operator_runtime.ops import DESCRIPTIONS

ROOT = Path(__file__).resolve().parent.parent
READMES = [ROOT / "README.md", ROOT / "README.zh.md"]


def _table_ops(text: str, first_cell: str) -> list:
    """The op names in the first column of every table row after a header
    row whose first cell is `first_cell`."""
    names, in_table = [], False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            in_table = False
        elif cells[0] == first_cell:
            in_table = True
        elif in_table and not set(cells[0]) <= set("-: "):
            names.append(cells[0].strip("`"))
    return names


@pytest.mark.parametrize("readme", READMES, ids=lambda p: p.name)
def test_op_tables_list_the_discovered_ops(readme):
    text = readme.read_text(encoding="utf-8")
    header = "Operator" if readme.name == "README.md" else "算子"
    rows = _table_ops(text, header)
    expected = sorted(DESCRIPTIONS)
    assert rows, f"{readme.name}: no operator table found"
    # Two tables (backends, Python forms), each one row per op.
    assert sorted(rows) == sorted(expected * 2), (readme.name, rows)
