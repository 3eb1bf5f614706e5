"""Helpers for driving ``referee serve`` end to end with pytest-lsp (see tests/test_lsp.py)."""
