"""Before/after pairs for the anti-gaming guard: cheats it must catch, honest edits it
must let through. Shared by tests/test_guard.py and bench/guard.py."""
