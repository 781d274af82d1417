"""Turning findings into edits: the replaced nodes' code, the imports a fix adds or leaves
unused, in modules and notebooks; hands the fixed text to running's writer."""
