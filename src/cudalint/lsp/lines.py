"""A document's lines and their lengths as LSP counts them."""

from __future__ import annotations

import re

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"

# LSP ends lines at \n, \r\n and \r only; str.splitlines() would also split at \f, \v, \x85...
_LINE_END = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The document's lines as LSP counts them, without their endings ("a\\n" has two)."""
    return _LINE_END.split(text)


def code_units(text: str, encoding: str) -> int:
    """How many code units of `encoding` `text` takes."""
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", errors="surrogatepass"))
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)
