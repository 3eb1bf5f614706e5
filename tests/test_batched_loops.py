"""The loop rule of the batched decoder (referee.checks.judge.batched.looping): a code
answer that has fallen into a loop is cut; real code is not. With the model:
tests/test_batched_model.py."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from referee.checks.judge.batched import looping

HEAD = b"```python\ndef cell_len(text: str) -> int:\n    # a terminal counts "


def test_a_unit_repeated_past_two_hundred_bytes_is_a_loop_and_not_before():
    unit = b"\\x1b[1m\\x1b[3m\\x1b[2m\\x1b[7m"
    text = HEAD
    cut_at = None
    for n in range(1, 40):
        text += unit
        if looping(text):
            cut_at = n
            break
    assert cut_at is not None
    # the loop is seen once 200 bytes past its first unit repeat it, not sooner
    assert 200 <= (cut_at - 1) * len(unit) < 200 + 2 * len(unit)


def test_one_line_with_only_its_number_changing_is_a_loop_after_sixteen_lines():
    lines = [b'        unicodedata.discard("UNICODE_%d")\n' % n for n in range(9, 40)]
    text = HEAD + b"\n"
    cut_at = [n for n in range(1, len(lines) + 1) if looping(text + b"".join(lines[:n]))]
    assert cut_at[0] == 16


@pytest.mark.parametrize(
    "row",
    [b"    %d,\n", b"    (%d, %d),\n", b"    0x%d: 0x%d,\n", b"    {%d: %d},\n"],
    ids=["numbers", "pairs", "hex", "dicts"],
)
def test_a_table_of_numbers_is_not_a_loop(row):
    """Rows without a word: a table the answer needs (code points, a matrix)."""
    count = row.count(b"%d")
    text = b"TABLE = (\n" + b"".join(row % ((n * 7 % 97,) * count) for n in range(80))
    assert not looping(text)


def test_sixteen_lines_that_differ_in_a_word_are_not_a_loop():
    names = [b"name_" + bytes([ord("a") + i]) * 3 for i in range(20)]
    text = b"".join(b"    seen.add(%s_1)\n" % name for name in names)
    assert not looping(text)


def test_no_line_of_real_library_code_ends_a_loop():
    """CPython's own modules, cut at every line: no prefix is a loop (the rule's false
    alarms; six generated files of 3,000 modules of the library and site-packages hold
    one, as the function's docstring says)."""
    library = Path(sysconfig.get_paths()["stdlib"])
    names = ["textwrap.py", "difflib.py", "json/decoder.py", "dataclasses.py", "inspect.py"]
    checked = 0
    for name in names:
        data = (library / name).read_bytes()
        end = data.find(b"\n")
        while end != -1:
            assert not looping(data[: end + 1]), (name, data[: end + 1][-300:])
            checked += 1
            end = data.find(b"\n", end + 1)
    assert checked > 7_000
