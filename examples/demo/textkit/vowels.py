"""Counting and slugs."""


def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, either case) ``text`` contains.

    >>> count_vowels("referee")
    4
    """
    return sum(1 for ch in text.lower() if ch in "aeiou")


def slugify(title: str) -> str:
    """Turn "Hello World" into "hello-world"."""
    # TODO: implement
    pass
