"""Tags of a tool, found in its name and description (English and Chinese) and in its annotations.

The controller design names four tags (notification, emergency, navigation, perception); an
operator adds more, or more words for these, under `gateway.index.tag_rules` (keywords or
`/regex/`, config/tag_rules.py). Keywords are chosen to avoid common false friends: "message"
alone is in every git tool ("commit message"), "push" is git push, "path" is any file path, so
only phrases such as "send message" or "path planning" count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from mcp_nexus.config.tag_rules import compile_rule, has_cjk, is_regex_rule

BUILTIN_TAG_RULES: dict[str, tuple[str, ...]] = {
    "notification": (
        "notify",
        "notifies",
        "notification",
        "notifications",
        "alert",
        "alerts",
        "remind",
        "reminder",
        "reminders",
        "send message",
        "send a message",
        "send email",
        "email",
        "sms",
        "text message",
        "push notification",
        "announce",
        "announcement",
        "broadcast",
        "通知",
        "提醒",
        "推送",
        "告知",
        "发送消息",
        "短信",
        "邮件",
        "播报",
        "广播",
        "告警",
    ),
    "emergency": (
        "emergency",
        "urgent",
        "sos",
        "panic",
        "e-stop",
        "estop",
        "alarm",
        "fire alarm",
        "evacuate",
        "evacuation",
        "hazard",
        "safety stop",
        "紧急",
        "急停",
        "报警",
        "求救",
        "救援",
        "火警",
        "危险",
        "疏散",
    ),
    "navigation": (
        "navigate",
        "navigates",
        "navigation",
        "go to",
        "goto",
        "move to",
        "drive to",
        "waypoint",
        "waypoints",
        "route",
        "routes",
        "path planning",
        "plan path",
        "localization",
        "localize",
        "pose",
        "target position",
        "odometry",
        "导航",
        "路径规划",
        "路线",
        "前往",
        "移动到",
        "去往",
        "航点",
        "定位",
        "地图",
        "位姿",
        "目标点",
    ),
    "perception": (
        "camera",
        "cameras",
        "vision",
        "detect",
        "detects",
        "detection",
        "object detection",
        "recognize",
        "recognise",
        "recognition",
        "sensor",
        "sensors",
        "lidar",
        "perceive",
        "perception",
        "point cloud",
        "depth image",
        "take photo",
        "take a photo",
        "ocr",
        "感知",
        "摄像头",
        "相机",
        "拍照",
        "识别",
        "检测",
        "传感器",
        "视觉",
        "激光雷达",
        "点云",
    ),
}

ANNOTATION_TAGS: dict[str, str] = {
    "readOnlyHint": "read-only",
    "destructiveHint": "destructive",
    "idempotentHint": "idempotent",
    "openWorldHint": "open-world",
}
"""A hint set to true in a tool's annotations gives it this tag."""

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^0-9A-Za-z\u00c0-\uffff]+")


def name_words(name: str) -> str:
    """`navigateTo`, `navigate_to`, `robot.navigate-to` -> "navigate to" (robot...)."""
    return _SEPARATORS.sub(" ", _CAMEL.sub(" ", name)).strip().lower()


_WORDS = re.compile(r"[a-z0-9]+")


class _TagRule:
    """One tag's rules, split by kind so that matching is set lookups, not a hundred regex scans."""

    def __init__(self, rules: Iterable[str]) -> None:
        self.words: set[str] = set()
        self.phrases: list[str] = []  # " send message " (spaces around, on the text's word sequence)
        self.substrings: list[str] = []  # Chinese keywords
        self.patterns: list[re.Pattern[str]] = []
        for rule in rules:
            if is_regex_rule(rule):
                self.patterns.append(compile_rule(rule))
            elif has_cjk(rule):
                self.substrings.append(rule.strip())
            else:
                words = _WORDS.findall(rule.lower())
                if len(words) == 1:
                    self.words.add(words[0])
                elif words:
                    self.phrases.append(f" {' '.join(words)} ")

    def matches(self, text: str, words: set[str], sequence: str) -> bool:
        return (
            not self.words.isdisjoint(words)
            or any(phrase in sequence for phrase in self.phrases)
            or any(part in text for part in self.substrings)
            or any(pattern.search(text) for pattern in self.patterns)
        )


class Tagger:
    """Built-in rules merged with the operator's; compiled once per settings object."""

    def __init__(self, user_rules: Mapping[str, Iterable[str]] | None = None) -> None:
        merged: dict[str, list[str]] = {tag: list(rules) for tag, rules in BUILTIN_TAG_RULES.items()}
        for tag, rules in (user_rules or {}).items():
            merged.setdefault(tag, []).extend(rules)
        self.rules: dict[str, _TagRule] = {tag: _TagRule(rules) for tag, rules in merged.items()}

    @property
    def known_tags(self) -> list[str]:
        return [*self.rules, *ANNOTATION_TAGS.values()]

    def tags_for(
        self, name: str, description: str, annotations: Mapping[str, Any] | None = None
    ) -> list[str]:
        """The tags in a stable order: rule tags as configured, then annotation tags."""
        text = f"{name_words(name)}\n{name}\n{description}"
        found_words = _WORDS.findall(text.lower())
        words = set(found_words)
        sequence = f" {' '.join(found_words)} "
        found = [tag for tag, rule in self.rules.items() if rule.matches(text, words, sequence)]
        for hint, tag in ANNOTATION_TAGS.items():
            if (annotations or {}).get(hint) is True:
                found.append(tag)
        return found
