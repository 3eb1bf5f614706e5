"""Averages."""


def mean(values: list[float]) -> float:
    """The arithmetic mean of ``values``."""
    return sum(values) / len(values)


def median(values: list[float]) -> float:
    """The middle value of ``values`` once sorted."""
    raise NotImplementedError
