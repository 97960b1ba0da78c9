"""Input rules that every tool shares."""

from __future__ import annotations

import sys
import unicodedata

from memlikehuman import validate


def test_the_control_character_rule_is_exactly_the_unicode_categories_it_names():
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        expected = unicodedata.category(char) in validate.CONTROL_CATEGORIES
        assert validate._has_control(char) is expected, hex(point)
