"""Secrets and personal data found by shape in text, replaced by `[REDACTED:<kind>]`.

Shape rules, not a detector library: `detect-secrets` was considered, but it scans files line
by line for a report and brings entropy plugins that flag ordinary hashes and ids; what a
gateway needs is spans to replace in any text, fast, personal data included. Each rule is
a regular expression, some with a check that rejects look-alikes (the resident ID's checksum, a
card's Luhn digit, a phone number's digit count). tests/pipeline/test_redaction_rules.py holds
the table of what each kind must and must not match. Kinds (metric label values, a fixed set):

    private_key   -----BEGIN ... PRIVATE KEY----- blocks
    jwt           eyJ... three base64url parts
    api_key       provider key shapes: OpenAI/Anthropic sk-, GitHub ghp_/github_pat_, AWS AKIA/ASIA,
                  Google AIza, Slack xox?-, Stripe sk_live_/rk_live_, GitLab glpat-
    bearer_token  the token after "Bearer "
    credential    the value in api_key=..., "token": "...", password: ... (8+ characters)
    cn_id         mainland China resident ID: 18 characters, birth date and checksum valid
    card          payment card numbers, 13-19 digits passing the Luhn check
    email         e-mail addresses
    phone         mainland China mobiles (1[3-9] + 9 digits, with or without +86/0086 and
                  spaces or dashes), China landlines (0xx-xxxxxxxx), other +country numbers
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


def valid_cn_id(text: str) -> bool:
    """The resident ID's last character is the ISO 7064 MOD 11-2 check of the first 17 digits."""
    digits = text[:17]
    total = sum(int(d) * w for d, w in zip(digits, _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11] == text[17].upper()


def luhn_valid(text: str) -> bool:
    digits = [int(c) for c in text if c.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def _phone_digits_ok(text: str) -> bool:
    return 8 <= sum(c.isdigit() for c in text) <= 15


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None  # on the matched span (or group 1)
    group: int = 0  # 1: only the first group is the secret (the rest says what it is)


RULES: tuple[Rule, ...] = (
    Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----"
        ),
    ),
    Rule("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    Rule(
        "api_key",
        re.compile(
            r"(?<![A-Za-z0-9_-])(?:"
            r"sk-(?:proj-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{20,}"
            r"|gh[pousr]_[A-Za-z0-9]{36,}"
            r"|github_pat_[A-Za-z0-9_]{22,}"
            r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
            r"|AIza[0-9A-Za-z_-]{35}"
            r"|xox[abprs]-[A-Za-z0-9-]{10,}"
            r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"
            r"|glpat-[A-Za-z0-9_-]{20,}"
            r")(?![A-Za-z0-9_-])"
        ),
    ),
    Rule("bearer_token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)"), group=1),
    Rule(
        "credential",
        re.compile(
            r"(?i)\b(?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|secret[_-]?key|client[_-]?secret"
            r"|password|passwd|token|secret)\b[\"']?\s*[:=]\s*[\"']?([^\s\"',;}{\[\]]{8,})"
        ),
        group=1,
    ),
    Rule(
        "cn_id",
        re.compile(
            r"(?<![0-9A-Za-z])[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[0-9Xx]"
            r"(?![0-9A-Za-z])"
        ),
        valid_cn_id,
    ),
    Rule("card", re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"), luhn_valid),
    Rule(
        "email",
        re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
    ),
    Rule(
        "phone",
        re.compile(
            r"(?<![\d+])(?:(?:\+|00)86[\s-]?)?1[3-9]\d(?:[\s-]?\d{4}){2}(?!\d)"  # China mobile
            r"|(?<![\d+-])0\d{2,3}-\d{7,8}(?![\d-])"  # China landline with its area code
            r"|(?<![\w+])\+[1-9]\d{0,2}(?:[\s.-]?\(?\d{1,4}\)?){2,5}(?!\d)"  # +country, elsewhere
        ),
        _phone_digits_ok,
    ),
)

KINDS: tuple[str, ...] = tuple(rule.kind for rule in RULES)


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def redact_text(text: str, kinds: frozenset[str] | None = None) -> tuple[str, Counter[str]]:
    """`text` with every match replaced, and how many of each kind (never the values themselves).

    Rules run in the order above on the text the earlier ones left, so a span is counted once
    (a token inside a JWT is not also an api_key)."""
    found: Counter[str] = Counter()
    for rule in RULES:
        if kinds is not None and rule.kind not in kinds:
            continue
        if rule.kind == "email" and "@" not in text:
            continue

        def replace(match: re.Match[str], rule: Rule = rule) -> str:
            secret = match.group(rule.group)
            if rule.check is not None and not rule.check(secret):
                return match.group(0)
            found[rule.kind] += 1
            if rule.group == 0:
                return placeholder(rule.kind)
            start, end = match.span(rule.group)
            whole = match.group(0)
            offset = match.start(0)
            return whole[: start - offset] + placeholder(rule.kind) + whole[end - offset :]

        text = rule.pattern.sub(replace, text)
    return text, found
