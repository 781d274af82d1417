"""The engine: a file's way from bytes to findings and fixes, one subpackage per stage, in order:
reading -> checkers (per kind) -> first_pass -> walk -> locate -> fixes; project and running
work over many files. settings.py and report.py are shared by every stage."""
