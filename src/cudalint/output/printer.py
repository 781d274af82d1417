"""Lines of styled text: through rich on a terminal (colours), as plain text otherwise.

rich costs about 0.1 s to import and a millisecond per line printed, so it is loaded only
when its styles would show. The plain text is what rich writes to a pipe: control codes
dropped and tabs expanded, so piped output is the same either way.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from typing import IO, Any

Piece = str | tuple[str, str]  # text, or (text, rich style)
_CONTROL_CODES = str.maketrans("", "", "\x07\x08\x0b\x0c\r")
TAB_SIZE = 8  # rich's


def is_terminal(stream: IO[str]) -> bool:
    """Whether rich would style this stream: a terminal, or FORCE_COLOR set (as rich reads it)."""
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Printer:
    def __init__(self, stream: IO[str], *, styled: bool | None = None) -> None:
        self.stream = stream
        self._console: Any = None
        if is_terminal(stream) if styled is None else styled:
            from rich.console import Console

            self._console = Console(file=stream, highlight=False, soft_wrap=True)

    def print(self, *pieces: Piece, end: str = "\n") -> None:
        """One line (or several, split at newlines) made of the pieces."""
        parts = [(piece, "") if isinstance(piece, str) else piece for piece in pieces]
        if self._console is None:
            text = "".join(text for text, _ in parts).translate(_CONTROL_CODES)
            self.stream.write("\n".join(line.expandtabs(TAB_SIZE) for line in text.split("\n"))
                              + end)
            return
        from rich.text import Text

        line = Text()
        for text, style in parts:
            line.append(text, style=style or None)
        self._console.print(line, end=end)

    def write(self, text: str) -> None:
        """Text exactly as given (tab-separated columns for `cut`)."""
        self.stream.write(text)
