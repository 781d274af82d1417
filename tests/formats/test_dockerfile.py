from __future__ import annotations

from cudalint.formats import dockerfile
from cudalint.formats.shell import expand


def test_instructions_with_continuations_comments_and_heredocs():
    text = (
        "# syntax=docker/dockerfile:1\n"
        "FROM python:3.11\n"
        "RUN apt-get update && \\\n"
        "    # a comment inside the instruction\n"
        "    apt-get install -y git\n"
        "RUN <<EOF\n"
        "nvidia-smi\n"
        "EOF\n"
        'CMD ["nvidia-smi", "-L"]\n'
    )
    instructions = dockerfile.parse(text)
    assert [(i.keyword, i.row) for i in instructions] == [("FROM", 2), ("RUN", 3), ("RUN", 6),
                                                          ("CMD", 9)]
    commands = [c for instruction in instructions for c in dockerfile.script_of(instruction)]
    assert [([w.value for w in c.words], c.position(c.words[0])) for c in commands] == [
        (["apt-get", "update"], (3, 5)),
        (["apt-get", "install", "-y", "git"], (5, 5)),
        (["nvidia-smi"], (7, 1)),  # the heredoc body
        (["nvidia-smi", "-L"], (9, 6)),  # the exec form, at its columns
    ]


def test_escape_directive_and_env_forms():
    text = "# escape=`\nFROM x\nENV A=1 B=\"two words\" `\n    C=3\nENV OLD value here\n"
    envs = [i.env_pairs() for i in dockerfile.parse(text) if i.keyword == "ENV"]
    assert envs == [
        [("A", "1", (3, 5)), ("B", "two words", (3, 9)), ("C", "3", (4, 5))],
        [("OLD", "value here", (5, 5))],
    ]


def test_arguments_substitute_into_from():
    instructions = dockerfile.parse("ARG BASE=nvidia/cuda:12.1\nARG TAG\nFROM ${BASE}\n"
                                    "ENV BASE=python\nFROM ${BASE}\n")
    seen = dockerfile.variables_at(instructions)
    # A FROM line reads the global ARGs, never a stage's ENV.
    assert expand("${BASE}", seen[2]) == expand("${BASE}", seen[4]) == "nvidia/cuda:12.1"
    assert expand("$TAG-x", seen[2]) == "$TAG-x"  # no default: left as written
    assert expand("${TAG:-latest}", seen[2]) == "${TAG:-latest}"


def test_noqa_comment_above_covers_the_instruction():
    lines = ["FROM x", "# noqa: CUD501", "RUN nvcc -V && \\", "    nvidia-smi", "RUN a"]
    assert dockerfile.noqa_lines(lines) == [
        "FROM x", "# noqa: CUD501", "RUN nvcc -V && \\  # noqa: CUD501",
        "    nvidia-smi  # noqa: CUD501", "RUN a",
    ]
