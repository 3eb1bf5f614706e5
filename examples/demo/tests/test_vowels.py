from unittest import mock

import pytest

from textkit.vowels import count_vowels, slugify


def test_count_vowels():
    # A wrong test: "aeiou" has five vowels. L0/L1 cannot know that; `referee
    # arbitrate` decides which side is wrong.
    assert count_vowels("aeiou") == 4


def test_slugify_runs():
    slugify("Hello World")


def test_count_vowels_empty():
    assert True


def test_count_vowels_upper():
    assert (count_vowels("AEIOU") == 5, "upper case counts")


def test_count_vowels_is_stable():
    result = count_vowels("banana")
    assert result is result


def test_no_vowels():
    assert count_vowels("xyz") is []


def test_notifies():
    notify = mock.Mock()
    notify("done")
    notify.called_once_with("done")


def test_never_fails():
    try:
        assert count_vowels("sky") == 1
    except AssertionError:
        pass


@pytest.mark.skip
def test_unicode():
    assert count_vowels("été") == 2


def test_slugify_punctuation():
    pass


def test_count_vowels_mixed_case():
    count_vowels("Banana") == 3


@pytest.mark.parametrize("word, n", [("sky", 0), ("tree", 2), ("sky", 0)])
def test_count_vowels_words(word, n):
    assert count_vowels(word) == n
