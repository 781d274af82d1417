from __future__ import annotations

from cudalint.formats.requirements import Line, read_lines


def test_lines_options_and_continuations():
    text = [
        "# a comment",
        "-r base.txt",
        "--extra-index-url=https://download.pytorch.org/whl/cu121",
        "  torch==2.1.0+cu121 \\",
        "    --hash=sha256:abc  # pinned",
        "",
        "-i https://pypi.org/simple",
        "numpy  # cuda not needed",
    ]
    assert list(read_lines(text)) == [
        Line(2, 1, "-r base.txt", "--requirement", "base.txt", 4),
        Line(3, 1, "--extra-index-url=https://download.pytorch.org/whl/cu121",
             "--extra-index-url", "https://download.pytorch.org/whl/cu121", 19),
        Line(4, 3, "torch==2.1.0+cu121"),
        Line(7, 1, "-i https://pypi.org/simple", "--index-url", "https://pypi.org/simple", 4),
        Line(8, 1, "numpy"),
    ]
