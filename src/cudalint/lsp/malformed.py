"""One log line for each malformed message a client sends (a `didChange` without its
changes, params of the wrong type), where pygls logs the deserializer's traceback and then
the reader's, some fifty lines a message."""

from __future__ import annotations

import logging
import sys

_DESERIALIZE = "Unable to deserialize message"
_HANDLE = "Unable to handle message"


class _OneLine(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        error = sys.exc_info()[1]  # the log calls are made in their except blocks
        if message.startswith(_DESERIALIZE):
            record.msg, record.args = "malformed message ignored: %s", (_summary(error),)
            record.exc_info = record.exc_text = None
            return True
        # The reader's line for the same message: its error is pygls's, raised from the
        # deserializer's, which has been said.
        return not (message == _HANDLE and error is not None and error.__cause__ is not None
                    and type(error).__module__.startswith("pygls"))


def _summary(error: BaseException | None) -> str:
    if error is None:
        return "unknown error"
    try:
        from cattrs import transform_error

        return "; ".join(transform_error(error))  # type: ignore[arg-type]
    except Exception:  # not a cattrs validation error
        return f"{type(error).__name__}: {error}"


def install() -> None:
    """Filter pygls's loggers of incoming messages (once)."""
    one_line = _OneLine()
    for name in ("pygls.protocol.json_rpc", "pygls.io_", "pygls.server"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _OneLine) for f in logger.filters):
            logger.addFilter(one_line)
