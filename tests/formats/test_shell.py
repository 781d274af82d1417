"""The shell scanner: words, positions, substitutions, guards."""

from __future__ import annotations

import pytest

from cudalint.formats.shell import (
    Segment,
    assigned,
    lines_of,
    program,
    read_command_string,
    read_script,
)


def _commands(text: str) -> list[tuple[list[str], bool]]:
    return [([w.value for w in c.words], c.guarded) for c in read_command_string(text)]


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        pytest.param("echo 'a b' \"c d\" e\\ f", [(["echo", "a b", "c d", "e f"], False)],
                     id="quotes"),
        pytest.param("nvidia-smi # nvcc here is a comment", [(["nvidia-smi"], False)],
                     id="comment"),
        pytest.param("echo a#b", [(["echo", "a#b"], False)], id="hash-inside-a-word"),
        pytest.param("a && b || c; d | e & f",
                     [(["a"], False), (["b"], True), (["c"], False), (["d"], False),
                      (["e"], False), (["f"], False)], id="separators"),
        pytest.param("X=$(nvidia-smi -L) run",
                     [(["X=$(nvidia-smi -L)", "run"], False), (["nvidia-smi", "-L"], False)],
                     id="substitution"),
        pytest.param('echo "n: $(nvcc --version | head -1)"',
                     [(["echo", "n: $(nvcc --version | head -1)"], False),
                      (["nvcc", "--version"], False), (["head", "-1"], False)],
                     id="substitution-in-double-quotes"),
        pytest.param("echo 'no $(nvcc) here'", [(["echo", "no $(nvcc) here"], False)],
                     id="single-quotes-are-literal"),
        pytest.param("v=`nvcc -V`", [(["v=`nvcc -V`"], False), (["nvcc", "-V"], False)],
                     id="backticks"),
        pytest.param("nvidia-smi > out.txt 2>&1", [(["nvidia-smi"], False)],
                     id="redirections"),
        pytest.param("if command -v nvcc >/dev/null; then nvcc -V; else echo no; fi",
                     [(["command", "-v", "nvcc"], True), (["nvcc", "-V"], True),
                      (["echo", "no"], False)], id="if-probe"),
        pytest.param("if [ -z \"$CUDA_HOME\" ]; then echo none; else nvcc -V; fi",
                     [(["[", "-z", "$CUDA_HOME", "]"], True), (["echo", "none"], False),
                      (["nvcc", "-V"], True)], id="negated-probe"),
        pytest.param("if [ -f x ]; then nvcc -V; fi", [(["[", "-f", "x", "]"], True),
                                                     (["nvcc", "-V"], False)],
                     id="if-without-probe"),
        pytest.param("echo $((1 + 2)) ${#a}", [(["echo", "$((1 + 2))", "${#a}"], False)],
                     id="arithmetic-and-parameters"),
        pytest.param("bash -c 'nvidia-smi; nvcc -V'",
                     [(["bash", "-c", "nvidia-smi; nvcc -V"], False), (["nvidia-smi"], False),
                      (["nvcc", "-V"], False)], id="bash-c"),
    ],
)
def test_commands(script, expected):
    assert _commands(script) == expected


def test_positions_across_continuations():
    commands = read_command_string("nvidia-smi \\\n  -L && nvcc \\\n  --version")
    assert [[c.position(w) for w in c.words] for c in commands] == [
        [(1, 1), (2, 3)], [(2, 9), (3, 3)],
    ]


def test_here_documents_are_skipped():
    script = "cat <<'EOF' > run.py\nimport subprocess\nnvidia-smi\nEOF\nnvcc -V\n"
    assert _commands(script) == [(["cat"], False), (["nvcc", "-V"], False)]


def test_a_quote_left_open_joins_lines():
    script = 'python -c "import torch\nprint(1)"\nnvidia-smi'
    commands = read_command_string(script)
    assert [w.value for w in commands[0].words][2] == "import torch\nprint(1)"
    assert commands[1].position(commands[1].words[0]) == (3, 1)


def test_pieces_keep_their_columns():
    line = (Segment(4, 10, "$X "), Segment(4, 20, "nvcc"), Segment(4, 24, " -V"))
    [command] = read_script([line])
    assert [command.position(w) for w in command.words] == [(4, 10), (4, 20), (4, 25)]


def test_program_skips_wrappers():
    [command] = read_command_string("sudo -u bob env A=1 nohup time nvcc -V")
    assert [w.value for w in program(command)] == ["nvcc", "-V"]
    [probe] = read_command_string("command -v nvcc")
    assert [w.value for w in program(probe)] == ["command", "-v", "nvcc"]


def test_assigned():
    [command] = read_command_string("A=1 env B=2 python x.py")
    assert [w.value for w in assigned(command)] == ["A=1", "B=2"]
    [export] = read_command_string('export C="a b" D')
    assert [w.value for w in assigned(export)] == ["C=a b", "D"]
    [csh] = read_command_string("setenv CUDA_HOME /usr/local/cuda")
    assert [w.value for w in assigned(csh)] == ["CUDA_HOME=/usr/local/cuda"]


def test_deep_nesting_and_huge_lines_end():
    deep = "echo " + "$(" * 5000 + "x" + ")" * 5000
    assert read_command_string(deep)[0].words[0].value == "echo"
    huge = "echo " + "a" * 1_000_000 + " && nvcc"
    assert _commands(huge)[-1] == (["nvcc"], False)
    assert list(read_script(lines_of([Segment(1, 1, "")]))) == []
