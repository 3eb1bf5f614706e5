"""Hostile programs and the harness that runs them through referee's public paths
(tests/test_red_team.py). Nothing here runs a hostile program itself: the programs are
text, served by a fake model server, and run only inside referee's sandbox."""
