"""Execution checks of L2: code is judged by running it before a model reads it.

- :mod:`.mutation` grades a changed test by the mutants of its target it kills (no model):
  :mod:`.targets` finds what the test calls and which lines it runs, :mod:`.mutants`
  writes the mutants;
- :mod:`.differential` runs a changed function beside k oracle programs written from its
  docstring (arbitration's oracles, cache included) on the docstring's examples, the
  arguments the project's tests pass it and inputs generated from its annotations
  (:mod:`.inputs`): :mod:`.running` runs them, :mod:`.compare` compares the values;
- :mod:`.run` is both for one file, as the engine and the language server call them.

Everything that runs goes through :mod:`referee.checks.sandbox`; the values are compared
here, in the parent.
"""
