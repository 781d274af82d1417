"""Shell command lines as the shell splits them, with the row and column of every word.

A small scanner following the POSIX token rules rather than `shlex`, which starts a comment at
any `#` (the shell only at the start of a word), does not look inside `$(...)` within double
quotes, and gives no positions. It reads shell scripts, Makefile recipes, Dockerfile `RUN`,
notebook `!` lines and command strings in Python.

A command is *guarded* when its failure is handled or it only runs on a CUDA machine: it sits in
an `if` condition, in the branch of an `if` whose condition mentions CUDA (`command -v nvidia-smi`,
`[ -d /usr/local/cuda ]`, `uname`), after `probe &&`, or before `|| fallback`.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

_SEPARATORS = ("&&", "||", ";;", "|&", ";", "&", "|", "(", ")")
_REDIRECT = re.compile(r"&>>|&>|<<<|<<-|<<|>>|<>|>&|<&|>\||<|>")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_MAX_DEPTH = 16  # nested `$(...)` deeper than this is left unread
_MAX_JOINED_PIECES = 400  # a quote left open joins at most this many pieces
# Words that open a compound command or a branch: stripped before the command word.
_PREFIX_WORDS = frozenset({"if", "elif", "then", "else", "while", "until", "do", "!", "{"})
_CLOSING_WORDS = frozenset({"fi", "done", "esac", "}", "then", "else", "do"})
_HEADER_WORDS = frozenset({"for", "case", "select", "function"})
# A condition mentioning one of these decides on CUDA (or on the platform).
_PROBE = re.compile(r"nvidia|cuda|gpu|nvcc|uname|ostype|darwin|linux", re.IGNORECASE)
# Commands that run the rest of their arguments as another command.
_WRAPPERS = frozenset({"sudo", "env", "nohup", "exec", "time", "nice", "stdbuf", "ionice",
                       "command", "builtin", "caffeinate", "xargs"})
_DECLARATIONS = frozenset({"export", "declare", "typeset", "local", "readonly", "setenv"})
# Options of those wrappers that take a value (`sudo -u user`, `nice -n 10`, `xargs -n 1`).
_VALUE_OPTIONS = frozenset({"-u", "-g", "-n", "-o", "-e", "-i", "-C", "-I", "-P", "-L", "-s"})

@dataclass(frozen=True)
class Segment:
    """A piece of a physical line: 1-based row, 1-based column of `text[0]`."""

    row: int
    column: int
    text: str


@dataclass
class LogicalLine:
    """Physical lines joined as the shell joins them (`\\` continuations, open quotes)."""

    segments: Sequence[Segment]
    text: str = field(init=False)
    _starts: list[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._starts, offset = [], 0
        for segment in self.segments:
            self._starts.append(offset)
            offset += len(segment.text)
        self.text = "".join(segment.text for segment in self.segments)

    def position(self, offset: int) -> tuple[int, int]:
        """The (row, column) of a character of `text`."""
        index = max(bisect_right(self._starts, offset) - 1, 0)
        segment = self.segments[index]
        return segment.row, segment.column + offset - self._starts[index]


@dataclass(frozen=True)
class Word:
    value: str  # as the command sees it: quotes and escapes removed, expansions as written
    start: int  # offsets in the logical line's text
    end: int
    nested: tuple[tuple[Word | str, ...], ...] = ()  # token streams of its `$(...)`, backticks


# A loop around a command: `for NAME in WORD...` (its variable and the values it takes);
# None for a loop that binds nothing from a list (`while`, `until`, `for ((...))`).
Loop = tuple[str, tuple[str, ...]] | None


@dataclass(frozen=True)
class Command:
    line: LogicalLine
    words: tuple[Word, ...]
    guarded: bool = False
    loops: tuple[Loop, ...] = ()  # the loops around it, outermost first

    def expanded(self, variables: Mapping[str, str]) -> Command:
        """The command as it runs with `variables` set: each word's `$NAME` read from them
        (`expand`), a word they turn into several (`apt-get install -y $PKGS`) split into as
        many, each at that word's place (`value_note` says what it was)."""
        if not variables or not any("$" in word.value for word in self.words):
            return self
        words: list[Word] = []
        for word in self.words:
            value = expand(word.value, variables)
            if value == word.value:
                words.append(word)
                continue
            words.extend(Word(part, word.start, word.end) for part in value.split() or [""])
        return replace(self, words=tuple(words))

    def value_note(self, word: Word) -> str:
        """`value_note` of a word of an `expanded` command: what the line says there, and
        what the variables made of it."""
        return value_note(self.line.text[word.start:word.end].strip("\"'"), word.value)

    def candidates(self, word: Word, variables: Mapping[str, str]) -> list[str]:
        """What `word` may hold when the command runs: its text with the `variables` set
        before read into it, and, where it is a loop's variable alone (`"$tool"`), each value
        of that loop (`for tool in /usr/bin/nvidia-smi nvidia-smi; do "$tool" -L; done`)."""
        found = [expand(word.value, variables)]
        for loop in self.loops:
            if loop is not None and word.value in (f"${loop[0]}", f"${{{loop[0]}}}"):
                found.extend(loop[1])
        return found

    def position(self, word: Word) -> tuple[int, int]:
        return self.line.position(word.start)

    @property
    def assignments(self) -> tuple[Word, ...]:
        """`A=1 B=2 cmd`: the leading assignments."""
        count = 0
        for word in self.words:
            if not _ASSIGNMENT.match(word.value):
                break
            count += 1
        return self.words[:count]

    @property
    def argv(self) -> tuple[Word, ...]:
        return self.words[len(self.assignments) :]


def basename(word: Word | str) -> str:
    """`/usr/local/cuda/bin/nvcc` -> `nvcc`; `${CUDA_HOME}/bin/nvcc` -> `nvcc`."""
    value = word.value if isinstance(word, Word) else word
    return posixpath.basename(value.rstrip("/"))


def program(command: Command) -> tuple[Word, ...]:
    """The argv of the program a command runs, past `sudo`, `env A=1`, `nohup`, `time`, ...
    (`command -v X` is a lookup, not a run: it stays as it is)."""
    argv = command.argv
    while argv and basename(argv[0]) in _WRAPPERS:
        if basename(argv[0]) == "command" and len(argv) > 1 and argv[1].value in ("-v", "-V"):
            return argv
        argv = _past_options(argv[1:])
    return argv


def _past_options(argv: tuple[Word, ...]) -> tuple[Word, ...]:
    while argv and (argv[0].value.startswith("-") or _ASSIGNMENT.match(argv[0].value)):
        argv = argv[2:] if argv[0].value in _VALUE_OPTIONS else argv[1:]
    return argv


def assigned(command: Command) -> Iterator[Word]:
    """Every `NAME=value` a command sets: prefixes, `env A=1`, `export A=1`, `declare -x A=1`,
    and csh's `setenv A 1` (reported at A)."""
    yield from command.assignments
    argv = command.argv
    while argv and basename(argv[0]) in _WRAPPERS:
        argv = argv[1:]
        while argv and (argv[0].value.startswith("-") or _ASSIGNMENT.match(argv[0].value)):
            if _ASSIGNMENT.match(argv[0].value):
                yield argv[0]
            argv = argv[1:]
    if not argv or argv[0].value not in _DECLARATIONS:
        return
    if argv[0].value == "setenv" and len(argv) > 1:
        value = argv[2].value if len(argv) > 2 else ""
        yield Word(f"{argv[1].value}={value}", argv[1].start, argv[1].end)
        return
    for word in argv[1:]:
        if _ASSIGNMENT.match(word.value) or re.fullmatch(r"[A-Za-z_]\w*", word.value):
            yield word


# `$NAME`, `${NAME}`, `${NAME:-default}` (and the other `${NAME<op>word}` forms).
_EXPANSION = re.compile(r"\$(?:\{([A-Za-z_]\w*)(?::?[-+=?][^}]*)?\}|([A-Za-z_]\w*))")


def expand(text: str, variables: Mapping[str, str]) -> str:
    """`text` with each `$NAME`, `${NAME}` or `${NAME:-default}` replaced by the value
    `variables` holds for NAME; a variable it does not know, or knows empty, is left as
    written (a run may set it otherwise: `--build-arg`, the caller's environment)."""
    if "$" not in text or not variables:
        return text
    return _EXPANSION.sub(lambda m: variables.get(m.group(1) or m.group(2)) or m.group(0), text)


def value_note(written: str, value: str) -> str:
    """What a finding on `value` adds where a variable gave it (`written`, what the script
    says there, names one and differs): ` (the value of `$PKGS`)`; else nothing."""
    return f" (the value of `{written}`)" if "$" in written and written != value else ""


def with_variables(commands: Iterable[Command], variables: Mapping[str, str] | None = None,
                   ) -> Iterator[tuple[Command, Mapping[str, str]]]:
    """Each command of a script, in order, with the variables set when it runs: `variables`
    (set before the script: a Dockerfile's `ARG` and `ENV`), then what the commands before it
    set, `NAME=value` alone or `export NAME=value` (not `NAME=value cmd`, which sets it for
    `cmd` only), each value read with those set before it. (One mapping, updated as the
    script goes on: read it before asking for the next command.)"""
    known = dict(variables or {})
    for command in commands:
        yield command, known
        argv = command.argv
        if argv and argv[0].value not in _DECLARATIONS:
            continue
        for word in assigned(command):
            name, equals, value = word.value.partition("=")
            if equals and not name.endswith("+"):
                known[name] = expand(value, known)


def mentions_probe(words: Iterable[Word]) -> bool:
    return any(_PROBE.search(word.value) for word in words)


# `$n_gpu`, `${USE_CUDA:-0}`: a variable's name says what the user set, not what is there.
_VARIABLE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*(?:[:#%/^,@][^}]*)?\}?")


def _chain_probe(words: Sequence[Word], negated: bool) -> bool:
    """The test before `&&` checks for CUDA or the driver itself (`nvidia-smi -L`,
    `command -v nvcc`, `[ -d /usr/local/cuda ]`): not a user's setting read from a variable
    (`[ -z "$n_gpu" ]`, `[ "$USE_CUDA" = 1 ]`), nor a test passing without CUDA (`! ...`,
    `[ -z ... ]`), as in an `if`."""
    if negated or any(w.value == "-z" for w in words):
        return False
    return any(_PROBE.search(_VARIABLE.sub("", word.value)) for word in words)


# -- scanning ---------------------------------------------------------------------------------
class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.heredocs: list[str] = []
        self.complete = True  # False when a quote or substitution is left open

    def scan(self, start: int, end: int, depth: int = 0) -> tuple[Word | str, ...]:
        """The words and operators of text[start:end]."""
        text, tokens = self.text, _Tokens()
        i = start
        while i < end:
            c = text[i]
            if c in " \t\r\n":
                tokens.flush(i)
                if c == "\n":
                    tokens.operator(";")
                i += 1
            elif c == "#" and not tokens.reading:
                newline = text.find("\n", i, end)
                i = end if newline < 0 else newline
            elif match := _REDIRECT.match(text, i, end):
                tokens.redirect(match.group(), i)
                i = match.end()
            elif c in ";&|()":
                tokens.flush(i)
                op = next(s for s in _SEPARATORS if text.startswith(s, i))
                tokens.operator(op)
                i += len(op)
            else:
                i = self._word_part(tokens, i, end, depth)
        tokens.flush(end)
        self.heredocs.extend(tokens.heredocs)
        return tuple(tokens.items)

    def _word_part(self, tokens: _Tokens, i: int, end: int, depth: int) -> int:
        """Read one piece of a word starting at `i`; returns where the next piece starts."""
        text, c = self.text, self.text[i]
        tokens.start(i)
        if c == "'":
            close = text.find("'", i + 1, end)
            if close < 0:
                self.complete, close = False, end
            tokens.add(text[i + 1 : close])
            return close + 1
        if c == '"':
            return self._double_quoted(tokens, i + 1, end, depth)
        if c == "\\":
            if i + 1 < end and text[i + 1] != "\n":
                tokens.add(text[i + 1])
            return i + 2
        if c in "$`":
            return self._expansion(tokens, i, end, depth)
        tokens.add(c)
        return i + 1

    def _double_quoted(self, tokens: _Tokens, i: int, end: int, depth: int) -> int:
        text = self.text
        while i < end:
            c = text[i]
            if c == '"':
                return i + 1
            if c == "\\" and i + 1 < end and text[i + 1] in '$`"\\\n':
                tokens.add(text[i + 1] if text[i + 1] != "\n" else "")
                i += 2
            elif c in "$`":
                i = self._expansion(tokens, i, end, depth)
            else:
                tokens.add(c)
                i += 1
        self.complete = False
        return end

    def _expansion(self, tokens: _Tokens, i: int, end: int, depth: int) -> int:
        """`$(...)` and backticks (their commands are read too), `$((...))`, `${...}`, `$x`."""
        text = self.text
        if text.startswith("$((", i):
            close = _closing(text, i + 3, end, level=2)
        elif text.startswith("$(", i) or text[i] == "`":
            inner = i + 2 if text[i] == "$" else i + 1
            close = _closing(text, inner, end) if text[i] == "$" else closing(text, inner, end, "`")
            close = end if close < 0 else close
            if depth < _MAX_DEPTH:
                tokens.nest(self.scan(inner, min(close, end), depth + 1))
        elif text.startswith("${", i):
            close = text.find("}", i + 2, end)
            close = end if close < 0 else close
        else:
            tokens.add("$")
            return i + 1
        if close >= end:
            self.complete = False
        tokens.add(text[i : close + 1])
        return close + 1


class _Tokens:
    """The token stream being built: words (with their nested streams) and operators."""

    def __init__(self) -> None:
        self.items: list[Word | str] = []
        self.heredocs: list[str] = []
        self._parts: list[str] | None = None
        self._nested: list[tuple[Word | str, ...]] = []
        self._start = 0
        self._redirect: str | None = None

    @property
    def reading(self) -> bool:
        return self._parts is not None

    def start(self, at: int) -> None:
        if self._parts is None:
            self._parts, self._nested, self._start = [], [], at

    def add(self, text: str) -> None:
        assert self._parts is not None
        self._parts.append(text)

    def nest(self, stream: tuple[Word | str, ...]) -> None:
        self._nested.append(stream)

    def redirect(self, op: str, at: int) -> None:
        if self._parts is not None and "".join(self._parts).isdigit():
            self._parts = None  # `2>&1`: the 2 is part of the operator
        self.flush(at)
        self._redirect = op

    def operator(self, op: str) -> None:
        self.items.append(op)

    def flush(self, at: int) -> None:
        if self._parts is None:
            return
        word = Word("".join(self._parts), self._start, at, tuple(self._nested))
        self._parts = None
        if self._redirect is None:
            self.items.append(word)
            return
        if self._redirect in ("<<", "<<-"):
            self.heredocs.append(word.value)
        self._redirect = None


def _closing(text: str, i: int, end: int, level: int = 1) -> int:
    """The index of the `)` closing a `$(` (or `))` for `level` 2), skipping quoted text."""
    while i < end:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"":
            close = text.find(c, i + 1, end) if c == "'" else closing(text, i + 1, end)
            if close < 0:
                return end
            i = close + 1
            continue
        if c == "(":
            level += 1
        elif c == ")":
            level -= 1
            if level == 0:
                return i
        i += 1
    return end


def closing(text: str, i: int, end: int, char: str = '"') -> int:
    """The index of the next `char` not escaped by a backslash, or -1."""
    while i < end:
        if text[i] == "\\":
            i += 2
        elif text[i] == char:
            return i
        else:
            i += 1
    return -1


# -- commands ---------------------------------------------------------------------------------
@dataclass
class _Block:
    probe: bool = False  # the condition mentions CUDA or the platform
    negated: bool = False  # `if ! ...` / `if [ -z ... ]`
    in_condition: bool = True
    active: bool = False  # the branch being read runs only with CUDA


class _Guards:
    """`if`/`fi` blocks across lines, as far as guarding goes."""

    def __init__(self) -> None:
        self.blocks: list[_Block] = []

    @property
    def active(self) -> bool:
        return any(b.active for b in self.blocks)

    @property
    def in_condition(self) -> bool:
        return bool(self.blocks) and self.blocks[-1].in_condition

    def keyword(self, word: str) -> None:
        if word == "if":
            self.blocks.append(_Block())
        elif not self.blocks:
            return
        block = self.blocks[-1]
        if word == "elif":
            block.in_condition, block.probe, block.negated = True, False, False
        elif word == "then":
            block.in_condition, block.active = False, block.probe and not block.negated
        elif word == "else":
            block.active = block.probe and block.negated
        elif word == "fi":
            self.blocks.pop()

    def condition(self, words: Sequence[Word], negated: bool) -> None:
        block = self.blocks[-1]
        if mentions_probe(words):
            block.probe = True
            block.negated = negated or any(w.value == "-z" for w in words)


def _split(tokens: Sequence[Word | str]) -> Iterator[tuple[list[Word], str, str]]:
    """Commands with the separators before and after them."""
    words: list[Word] = []
    before = ";"
    for token in tokens:
        if isinstance(token, Word):
            words.append(token)
            continue
        yield words, before, token
        words, before = [], token
    yield words, before, ";"


class _Reader:
    def __init__(self, guards: _Guards) -> None:
        self.guards = guards
        self.loops: list[Loop] = []  # the loops open, outermost first

    def _loop(self, words: Sequence[Word]) -> None:
        """Note a loop opened by `words` (from its keyword on); `done` closes the last."""
        keyword = words[0].value
        if keyword in ("while", "until"):
            self.loops.append(None)
        elif keyword in ("for", "select"):
            values = [word.value for word in words[3:]]
            listed = len(words) > 2 and words[2].value == "in"
            self.loops.append((words[1].value, tuple(values)) if listed else None)
        elif keyword == "done" and self.loops:
            self.loops.pop()

    def commands(
        self, line: LogicalLine, scanner: _Scanner, tokens: Sequence[Word | str],
        depth: int = 0, inherited: bool = False,
    ) -> Iterator[Command]:
        chain_probe = False
        for words, before, after in _split(tokens):
            negated = False
            while words and words[0].value in _PREFIX_WORDS:
                negated |= words[0].value == "!"
                self.guards.keyword(words[0].value)
                self._loop(words)
                words = words[1:]
            if len(words) == 1 and words[0].value in _CLOSING_WORDS:
                self.guards.keyword(words[0].value)
                self._loop(words)
                continue
            if words and words[0].value in ("for", "select"):
                self._loop(words)
            if not words or words[0].value in _HEADER_WORDS:
                continue
            in_condition = self.guards.in_condition
            if in_condition:
                self.guards.condition(words, negated)
            chained = before == "&&" and chain_probe
            guarded = (inherited or in_condition or chained or after == "||"
                       or self.guards.active)
            chain_probe = (chained or _chain_probe(words, negated)) if after == "&&" else False
            command = Command(line, tuple(words), guarded, tuple(self.loops))
            yield command
            for word in words:
                for stream in word.nested:
                    yield from self.commands(line, scanner, stream, depth + 1, guarded)
            inner = _shell_c_argument(command)
            if inner is not None and depth < _MAX_DEPTH:
                stream = scanner.scan(inner.start + 1, inner.end - 1, depth + 1)
                yield from self.commands(line, scanner, stream, depth + 1, guarded)


def _shell_c_argument(command: Command) -> Word | None:
    """The quoted script of `bash -c '...'` / `sh -c "..."`."""
    argv = program(command)
    if len(argv) < 3 or basename(argv[0]) not in ("bash", "sh", "zsh", "dash"):
        return None
    for flag, script in itertools.pairwise(argv):
        if flag.value.startswith("-") and flag.value.endswith("c"):
            raw = command.line.text[script.start : script.end]
            if len(raw) >= 2 and raw[0] in "'\"" and raw[-1] == raw[0]:
                return script
    return None


def _continues(text: str) -> bool:
    """A line ending in an odd number of backslashes continues on the next."""
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


def lines_of(segments: Iterable[Segment]) -> Iterator[tuple[Segment, ...]]:
    """Physical lines made of one segment each."""
    return ((segment,) for segment in segments)


def read_script(lines: Iterable[Sequence[Segment]], guarded_rows: frozenset[int] = frozenset(),
                ) -> Iterator[Command]:
    """Every command of a script, given as physical lines, with here-document bodies skipped.

    A physical line may be assembled from several segments (a Dockerfile `RUN` whose
    continuations Docker has already joined, a Makefile line with its variables expanded).
    `guarded_rows` are rows that only run on a CUDA machine by the enclosing format's own
    conditionals (a Makefile's `ifdef CUDA_HOME`)."""
    reader = _Reader(_Guards())
    heredocs: list[str] = []
    pending: list[Segment] = []
    for pieces in lines:
        text = "".join(piece.text for piece in pieces).rstrip("\r")
        if heredocs and not pending:
            if text.strip() == heredocs[0]:
                heredocs.pop(0)
            continue
        if _continues(text):
            pending.extend(_without_last_character(pieces))
            continue
        pending.extend(pieces)
        line = LogicalLine(pending)
        scanner = _Scanner(line.text)
        tokens = scanner.scan(0, len(line.text))
        if not scanner.complete and len(pending) < _MAX_JOINED_PIECES and pieces:
            last = pieces[-1]
            pending.append(Segment(last.row, last.column + len(last.text), "\n"))
            continue
        pending = []
        heredocs.extend(h for h in scanner.heredocs if h)
        for command in reader.commands(line, scanner, tokens):
            if command.position(command.words[0])[0] in guarded_rows:
                command = Command(command.line, command.words, True)
            yield command
    if pending:
        line = LogicalLine(pending)
        scanner = _Scanner(line.text)
        yield from reader.commands(line, scanner, scanner.scan(0, len(line.text)))


def _without_last_character(pieces: Sequence[Segment]) -> list[Segment]:
    """The pieces of a line less its final `\\` (and a carriage return before it)."""
    kept = [piece for piece in pieces if piece.text]
    if not kept:
        return []
    last = kept[-1]
    return [*kept[:-1], Segment(last.row, last.column, last.text.rstrip("\r")[:-1])]


def read_command_string(text: str, row: int = 1, column: int = 1) -> list[Command]:
    """The commands of one string (`os.system("nvidia-smi -L")`), placed at row/column."""
    lines = text.split("\n")
    return list(read_script(
        (Segment(row + index, column if index == 0 else 1, line),)
        for index, line in enumerate(lines)
    ))
