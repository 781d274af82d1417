"""Positions and suppressions: rows and columns for the statements that reported, computed
alone, then `# noqa`; hands positioned findings, and the nodes to replace, to fixes."""
