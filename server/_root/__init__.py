"""referee: keeps code honest when the same author writes a function and its tests.

The engine lives in :mod:`referee.checks`; the command line and the language server live in
:mod:`referee.server`.
"""

__version__ = "0.1.0"
