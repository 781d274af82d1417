"""`cudalint report`: the audit and the smoke runs, turned into a decision."""
