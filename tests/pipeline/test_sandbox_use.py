"""python_sandbox the way a model uses it: file names written in the code instead of `files`,
`data` without any name, and only the caller's own offloaded files (real bubblewrap sandbox)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from mcp_nexus.pipeline.call import Caller
from support.gateway import running_gateway
from support.governance_gateway import document, embedded, text

ALICE = Caller("http", "alice")
BOB = Caller("http", "bob")
FILE = re.compile(r"Saved to file (tool_output_[0-9a-f]{32}\.json)")


def servers(**gov: object) -> dict[str, object]:
    return {"gov": embedded(rate_limit=None, **gov)}


async def offload(gw: object, caller: Caller, items: int = 400) -> str:
    """Call a tool whose result is offloaded for `caller`; the file's name from the alert."""
    answer = text(await gw.call_tool("gov.big_list", {"items": items}, caller=caller))  # type: ignore[attr-defined]
    match = FILE.search(answer)
    assert match, answer[:300]
    return match.group(1)


async def sandbox(gw: object, caller: Caller, code: str, files: list[str] | None = None) -> tuple[bool, str]:
    arguments: dict[str, object] = {"code": code}
    if files is not None:
        arguments["files"] = files
    result = await gw.call_tool("python_sandbox", arguments, caller=caller)  # type: ignore[attr-defined]
    return bool(result.is_error), text(result)


# --- the file names written in the code are mounted when `files` is left out ---------------------


async def test_a_path_or_bare_name_in_the_code_is_enough(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path / "data", servers(), rate_limit=None)) as gw:
        name = await offload(gw, ALICE)
        for code in (
            f"import json\nrows = json.load(open('/data/{name}'))\nprint(len(rows))",
            f"import json\nprint(len(json.load(open('{name}'))))",  # the bare name from the alert
            f"# reads {name}\nprint(len([x for x in data if 'light' in x['id']]))",  # `data`, the name in a comment
        ):
            failed, answer = await sandbox(gw, ALICE, code)
            assert not failed, answer
            assert answer.strip() in ("400", "200"), answer


async def test_several_names_in_the_code_mount_them_all(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path / "data", servers(), rate_limit=None)) as gw:
        first, second = await offload(gw, ALICE, 300), await offload(gw, ALICE, 500)
        code = (
            f"a, b = '/data/{first}', '/data/{second}'\n"
            "print(sorted(len(v) for v in files.values()), sorted(data) == sorted(files))"
        )
        failed, answer = await sandbox(gw, ALICE, code)
        assert not failed, answer
        assert answer.strip() == "[300, 500] True"


async def test_data_without_any_name_says_exactly_what_to_pass(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path / "data", servers(), rate_limit=None)) as gw:
        failed, answer = await sandbox(gw, ALICE, "print(len(data))")
        assert failed
        assert "no file was given" in answer and 'files: ["tool_output_<uuid>.json"]' in answer
        assert "This client has no offloaded files now" in answer

        older, newest = await offload(gw, ALICE, 300), await offload(gw, ALICE, 500)
        failed, answer = await sandbox(gw, ALICE, "import os\nprint(os.listdir('/data'))")
        assert failed
        assert f'files: ["{newest}"]' in answer  # the exact call to make, with the newest file
        listing = answer.split("newest first:\n", 1)[1].splitlines()
        assert [line.split(" ")[1] for line in listing] == [newest, older]
        assert re.fullmatch(rf"- {newest} \(\d+ bytes, saved \d+ s ago\)", listing[0])

        # the same code with the file passed works: the error named the right thing to do
        failed, answer = await sandbox(gw, ALICE, "print(len(data))", [newest])
        assert not failed and answer.strip() == "500", answer


async def test_code_that_reads_no_data_runs_without_files(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path / "data", servers(), rate_limit=None)) as gw:
        failed, answer = await sandbox(gw, ALICE, "data = [6, 7]\nprint(data[0] * data[1])")
        assert not failed and answer.strip() == "42", answer
        failed, answer = await sandbox(gw, ALICE, "import os\nprint(os.getcwd(), os.listdir('.'))")
        # `os.listdir('.')` reads no offloaded data: nothing mounted, the folder is empty
        assert not failed and answer.strip() == "/data []", answer


async def test_passed_files_keep_their_documented_meaning(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path / "data", servers(), rate_limit=None)) as gw:
        first, second = await offload(gw, ALICE, 300), await offload(gw, ALICE, 500)
        # one file passed: `data` is its content, even if the code names another one
        failed, answer = await sandbox(gw, ALICE, f"# not {second}\nprint(len(data))", [first])
        assert not failed and answer.strip() == "300", answer
        # the path the code sees is accepted as the name
        failed, answer = await sandbox(gw, ALICE, "print(len(data))", [f"/data/{second}"])
        assert not failed and answer.strip() == "500", answer
        # a file the code opens but `files` left out: the failure says to add it
        failed, answer = await sandbox(gw, ALICE, f"open('/data/{second}')", [first])
        assert failed and f"the code names {second}, not in `files`: add it there" in answer


# --- offloaded files belong to the caller that caused them ---------------------------------------


def without_names(answer: str) -> str:
    return re.sub(r"tool_output_[0-9a-z_]+\.json", "NAME", answer)


async def test_another_callers_file_is_refused_like_a_missing_one(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path / "data", servers(), rate_limit=None)) as gw:
        alices = await offload(gw, ALICE)
        missing = "tool_output_" + "0" * 32 + ".json"
        stolen = await sandbox(gw, BOB, "print(len(data))", [alices])
        absent = await sandbox(gw, BOB, "print(len(data))", [missing])
        assert stolen[0] and absent[0]
        assert f"file '{alices}' does not exist among this client's offloaded files" in stolen[1]
        # the same answer whether the file exists or not: nothing about other callers' files leaks
        assert without_names(stolen[1]) == without_names(absent[1])
        # (names left out: a random file name may itself hold "400")
        assert "len(data)" not in without_names(stolen[1]) and "400" not in without_names(stolen[1])

        both = await sandbox(gw, BOB, "print(data)", [alices, missing])
        assert both[0] and f"files '{alices}', '{missing}' do not exist among" in both[1]

        # named in the code instead: refused the same way, the code never runs
        failed, answer = await sandbox(gw, BOB, f"print(open('/data/{alices}').read()[:50])")
        assert failed and f"file '{alices}' named in the code does not exist" in answer
        assert "light.room" not in answer

        # a file of Bob's own does not open the folder: /data holds his file only
        bobs = await offload(gw, BOB, 100)
        failed, answer = await sandbox(gw, BOB, f"import os\nprint(sorted(os.listdir('/data')), '{bobs}')")
        assert not failed and answer.strip() == f"['{bobs}'] {bobs}", answer
        failed, answer = await sandbox(gw, BOB, f"open('/data/{alices}')", [bobs])
        assert failed and "FileNotFoundError" in answer
        # Alice still reads hers; Bob's own list names only his
        assert (await sandbox(gw, ALICE, "print(len(data))", [alices]))[1].strip() == "400"
        failed, answer = await sandbox(gw, BOB, "print(data)")
        assert failed and bobs in answer and alices not in answer


async def test_the_owner_is_the_client_and_the_frontend(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path / "data", servers(), rate_limit=None)) as gw:
        name = await offload(gw, Caller("http", "alice"))
        assert (await sandbox(gw, Caller("stdio", "alice"), "print(len(data))", [name]))[0]
        # callers without a client name share their frontend's anonymous owner
        anonymous = await offload(gw, Caller("http"))
        assert not (await sandbox(gw, Caller("http"), "print(len(data))", [anonymous]))[0]
        assert (await sandbox(gw, Caller("http", "alice"), "print(len(data))", [anonymous]))[0]
        assert (await sandbox(gw, Caller("xiaozhi"), "print(len(data))", [anonymous]))[0]


async def test_a_cached_alert_makes_its_new_caller_an_owner(tmp_path: Path) -> None:
    """A caller served an alert from the shared cache got that data: it may read the file."""
    async with running_gateway(document(tmp_path / "data", servers(cache_ttl=60), rate_limit=None)) as gw:
        alices = await offload(gw, ALICE)
        assert (await sandbox(gw, BOB, "print(len(data))", [alices]))[0]  # not Bob's yet
        bobs = await offload(gw, BOB)  # a cache hit: the same alert, the same file
        assert bobs == alices
        failed, answer = await sandbox(gw, BOB, "print(len(data))", [alices])
        assert not failed and answer.strip() == "400", answer
        assert (await sandbox(gw, Caller("http", "carol"), "print(len(data))", [alices]))[0]


async def test_ownership_survives_a_restart(tmp_path: Path) -> None:
    doc = document(tmp_path / "data", servers(), rate_limit=None)
    async with running_gateway(doc) as gw:
        name = await offload(gw, ALICE)
    async with running_gateway(doc) as gw:  # a new gateway on the same folder
        assert (await sandbox(gw, ALICE, "print(len(data))", [name]))[1].strip() == "400"
        assert (await sandbox(gw, BOB, "print(len(data))", [name]))[0]
    hidden = [p.name for p in (tmp_path / "data").iterdir() if p.name.startswith(".")]
    assert hidden == [f".{name}.owner"]
    owners = [json.loads(line) for line in (tmp_path / "data" / hidden[0]).read_text().splitlines()]
    assert owners == ["http:alice"]
