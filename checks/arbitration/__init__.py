"""Guarded arbitration: when a test fails, decide which side is wrong — the test or the
code — from a source of truth that saw neither, and fix only that side.

The steps live in their own modules: :mod:`.observe` runs the failing test with the pytest
plugin in :mod:`.plugin`, :mod:`.isolate` finds the call under test and where the expected
value is written, :mod:`.truth` asks the independent sources (doctest, reference,
oracles), :mod:`.fix` builds the edits, and :mod:`.engine` puts them together.

This package's ``__init__`` imports nothing: pytest imports :mod:`.plugin` in the user's
test process, which should not pay for the rest.
"""

# Where the plugin writes its records, and the dotted names it should resolve (JSON list).
OUT_ENV = "REFEREE_ARBITRATION_OUT"
NAMES_ENV = "REFEREE_ARBITRATION_NAMES"
# A test's call that runs longer than this many seconds has hung: the plugin dumps the
# stack (faulthandler) to HANG_OUT_ENV's file and ends the run.
HANG_ENV = "REFEREE_ARBITRATION_HANG_S"
HANG_OUT_ENV = "REFEREE_ARBITRATION_HANG_OUT"
# A test module's file and a line of it (JSON: {"file": ..., "line": N}): the plugin records
# the test frame's locals each time a test reaches that line — what the other cases of a
# parametrized test gave the failing assertion, read as the suite's examples.
WATCH_ENV = "REFEREE_ARBITRATION_WATCH"
