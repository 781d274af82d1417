"""The runtime half of cudalint: the portable device helper, `cudalint smoke` and the pytest plugin.

Nothing here imports torch at import time.
"""
