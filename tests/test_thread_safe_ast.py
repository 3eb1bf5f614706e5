"""Two threads parsing at once must not fail: CPython's AST constructor keeps its recursion
depth in state every thread shares (python/cpython#106905), and a garbage collection that
runs a finalizer mid-parse switches threads. The oracles' thread pool met it here as
``SystemError: AST constructor recursion depth mismatch``; importing referee makes
``ast.parse`` take one lock (referee/__init__.py)."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

import referee  # noqa: F401  (installs the lock)

# Six threads parse nested code while making garbage with finalizers, switching threads as
# often as the interpreter allows: each run of the control below fails within 60 parses.
RACE = """
import ast, gc, sys, threading
sys.setswitchinterval(1e-6)
gc.set_threshold(50, 1, 1)
if sys.argv[1] == "referee":
    import referee
source = "\\n".join(
    f"def f{i}(x):\\n    return [(a, b) for a in x if a for b in range(a)"
    f" if (lambda y: y + {i})(b)]"
    for i in range(30)
)


class Finalized:
    def __del__(self):
        pass


errors = []


def work():
    for _ in range(60):
        try:
            ast.parse(source)
            ast.literal_eval("[(1, 2), {'a': (3, [4])}]")
        except SystemError as error:
            errors.append(str(error))
            return
        garbage = [Finalized() for _ in range(5)]
        garbage.append(garbage)


threads = [threading.Thread(target=work) for _ in range(6)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(len(errors), errors[:1])
"""


def _errors(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", RACE, mode], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[0])


def test_threads_parsing_at_once_never_fail_once_referee_is_imported():
    assert getattr(ast.parse, "_referee_serialized", False)
    assert ast.parse("x = 1").body[0].lineno == 1  # the same parser behind the lock
    assert _errors("referee") == 0


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the race was measured on 3.11")
def test_the_same_threads_fail_without_the_lock():
    """The control: the workload does reach CPython's race, so the test above can fail."""
    assert _errors("plain") > 0
