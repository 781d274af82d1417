"""The subcommands' own code; `cudalint.cli` dispatches to them. (argparse's help formatter
is in `commands/help.py`: a check whose command line needs no argparse imports none.)"""
