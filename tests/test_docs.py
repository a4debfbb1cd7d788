"""The READMEs: their operator tables list exactly the discovered ops, and
the Chinese one keeps the English one's headings and code blocks."""

from __future__ import annotations

import re
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


def _headings(text: str) -> list:
    """The level (number of #) of every heading outside code blocks, in order."""
    levels, in_code = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            levels.append(len(line) - len(line.lstrip("#")))
    return levels


def _code_blocks(text: str) -> list:
    return re.findall(r"^```.*?^```", text, re.S | re.M)


def test_the_chinese_readme_follows_the_english_one():
    """README.zh.md is a translation: the same headings (in order, at the
    same levels) and the same code blocks, byte for byte."""
    english, chinese = (path.read_text(encoding="utf-8") for path in READMES)
    assert _headings(chinese) == _headings(english), "README.zh.md's headings differ from README.md's"
    en_blocks, zh_blocks = _code_blocks(english), _code_blocks(chinese)
    assert len(zh_blocks) == len(en_blocks), (len(en_blocks), len(zh_blocks))
    for index, (en, zh) in enumerate(zip(en_blocks, zh_blocks)):
        assert zh == en, f"code block {index} of README.zh.md differs from README.md's:\n{en[:300]}"
