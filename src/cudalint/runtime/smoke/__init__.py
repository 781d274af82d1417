"""`cudalint smoke TARGET`: run a target function on MPS or CPU and prove it behaves as on CUDA.

`command.main` is the entry point. Only the modules that the pipeline imports after the target
is loaded import torch, so that `PYTORCH_ENABLE_MPS_FALLBACK` set by the target before its own
`import torch` takes effect as it would in the user's program.
"""
