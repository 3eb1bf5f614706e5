"""DocstringCopy: the docstring a prompt shows, forced into an answer that copies it
(referee.checks.arbitration.programs). With the model: tests/test_batched_model.py."""

from __future__ import annotations

import pickle

import pytest

from referee.checks.arbitration.programs import DocstringCopy

DOC = '    """Parse the subset.\n\n    Args:\n        text: what to parse\n    """'
# what is forced: up to the docstring's last word; the closing quotes are the model's own
COPY = DOC[: DOC.rindex("parse") + len("parse")]
HEAD = '```python\nimport re\n\ndef parse(text: str = "(", *, strict=(1, 2)) -> int:\n'


@pytest.mark.parametrize("opened", ['    """', '    """Par', '    """Parse the subset.'])
def test_once_the_docstring_is_opened_the_rest_of_it_is_forced(opened):
    copy = DocstringCopy("parse", DOC)
    rest = copy(HEAD + opened)
    assert opened + rest == COPY
    assert copy(HEAD + COPY) == ""  # only the quotes are left: the model writes them


def test_the_copy_is_indented_as_the_model_indents():
    copy = DocstringCopy("parse", "        " + DOC.strip().replace("\n    ", "\n        "))
    assert copy(HEAD + '  """Parse') == " the subset.\n\n  Args:\n      text: what to parse"


@pytest.mark.parametrize(
    "written",
    [
        HEAD[:-1],  # the header is not finished
        HEAD,  # nothing of the body yet
        HEAD + "    ",  # an indent, no quotes
        HEAD + '    """Parses',  # its own words: the model's choice
        HEAD + "    '''Parse",  # other quotes
        HEAD + DOC,  # the copy is complete
        HEAD + DOC + "\n    return 1\n",
        '```python\ndef other(text):\n    """Parse',  # another function
        HEAD + '    return 1\n\ndef helper():\n    """Parse',
    ],
)
def test_nothing_is_forced_where_the_model_chooses(written):
    assert DocstringCopy("parse", DOC)(written) == ""


def test_a_header_over_several_lines_with_parentheses_in_its_defaults():
    header = '```python\ndef parse(\n    text,\n    pair=(1, (2, 3)),\n) -> "int":  # note\n'
    assert DocstringCopy("parse", DOC)(header + '    """') == COPY[len('    """') :]


def test_it_travels_to_the_model_process():
    copy = pickle.loads(pickle.dumps(DocstringCopy("parse", DOC)))
    assert copy(HEAD + '    """') == COPY[len('    """') :]
