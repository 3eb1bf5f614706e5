"""unittest's assertions about one call's value, and what each asserts: (operator, how
many of the first arguments are the compared values; one value: the other side is None).

The one table for the two places that read them: :mod:`~referee.checks.arbitration.isolate`
(the failing assertion in the test's text) and the recording plugin (the comparison as it
runs). The plugin runs in the project's interpreter, where referee may not be importable:
this module imports nothing, and :mod:`~referee.checks.arbitration.observe` ships it
beside the plugin, which imports it relatively.
"""

# The operators are the expectation the truth is checked against: ==, approx,
# truthy/falsy (boolean), is/is not (True, False, None), in/not in, != and the orderings.
METHODS = {
    "assertEqual": ("==", 2),
    "assertListEqual": ("==", 2),
    "assertTupleEqual": ("==", 2),
    "assertDictEqual": ("==", 2),
    "assertSetEqual": ("==", 2),
    "assertMultiLineEqual": ("==", 2),
    "assertAlmostEqual": ("approx", 2),
    "assertTrue": ("truthy", 1),
    "assertFalse": ("falsy", 1),
    "assertIsNone": ("is", 1),
    "assertIsNotNone": ("is not", 1),
    "assertIs": ("is", 2),
    "assertIsNot": ("is not", 2),
    "assertIn": ("in", 2),
    "assertNotIn": ("not in", 2),
    "assertNotEqual": ("!=", 2),
    "assertGreater": (">", 2),
    "assertGreaterEqual": (">=", 2),
    "assertLess": ("<", 2),
    "assertLessEqual": ("<=", 2),
}
# Deprecated spellings (gone in Python 3.12): read in a test's text as what they stand
# for; the plugin does not wrap them.
ALIASES = {
    "assertEquals": "assertEqual",
    "assertNotEquals": "assertNotEqual",
    "failIfEqual": "assertNotEqual",
    "assert_": "assertTrue",
    "failUnless": "assertTrue",
    "failIf": "assertFalse",
}
