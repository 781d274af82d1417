"""Reading a file: regular files only, within the size and memory limits, and LibCST's parse
without its per-node checks. Hands bytes (or a one-line ReadError) to the checkers."""
