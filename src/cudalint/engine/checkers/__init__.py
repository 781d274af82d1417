"""One checker per file kind that needs more than the file rules: Python (the syntax gate,
then the stages in order) and notebooks (cells masked, checked and fixed as Python); each
hands a FileReport back."""
