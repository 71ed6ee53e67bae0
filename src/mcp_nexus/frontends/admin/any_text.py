"""A route parameter that takes any text, slashes and line breaks included: `{name:any_text}`.

Why: a tool name is the caller's text. Starlette's `path` parameter is `.*`, and `.` stops at a
line break, so `/api/tools/a%0Ab/call` matched no route and got a plain-text 404 instead of
the API's answer for an unknown tool.
"""

from __future__ import annotations

from starlette.convertors import Convertor, register_url_convertor

NAME = "any_text"


class AnyText(Convertor[str]):
    regex = "(?s:.*)"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor(NAME, AnyText())
