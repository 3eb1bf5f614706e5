"""A module an agent left half-edited."""


def total(items)
    return sum(items)
