"""Linting one Python source: the first pass, LibCST's parse, the walk, positions and noqa
give its findings (`python.lint_python`); `autofix.fix_python` applies the allowed fixes and
lints again until none is left. Hands the checkers a file's findings and its fixed text."""
