"""The syntax of a tag rule (`gateway.index.tag_rules: {tag: [rule, ...]}`), shared by validation and matching.

A rule is a keyword, matched case-insensitively as a whole word in Latin script and as a
substring in CJK text (Chinese has no spaces between words), or a regular expression written
between slashes: `"/^nav_/"` (matched against the name, its words and the description, each on
a line of its own, case-insensitively).
"""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def is_regex_rule(rule: str) -> bool:
    return len(rule) >= 2 and rule.startswith("/") and rule.endswith("/")


def compile_rule(rule: str) -> re.Pattern[str]:
    """The pattern a rule stands for; raises `re.error` for a bad regular expression."""
    if is_regex_rule(rule):
        return re.compile(rule[1:-1], re.IGNORECASE | re.MULTILINE)
    keyword = rule.strip()
    if has_cjk(keyword):
        return re.compile(re.escape(keyword))
    # Words inside the keyword may be separated by spaces, '_' or '-' in names ("send_email").
    words = [re.escape(word) for word in re.split(r"[\s_-]+", keyword) if word]
    return re.compile(r"(?<![a-z0-9])" + r"[\s_-]+".join(words) + r"(?![a-z0-9])", re.IGNORECASE)


def check_rule(rule: str) -> str | None:
    """What is wrong with a rule, or None."""
    if not isinstance(rule, str) or not rule.strip():
        return "a rule must be a non-empty keyword or a /regular expression/"
    try:
        compile_rule(rule)
    except re.error as exc:
        return f"bad regular expression {rule!r}: {exc}"
    return None
