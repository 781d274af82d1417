"""The first pass: what LibCST need not read. The rules' terms (prefilter, needs) and `ast`'s
outline blank the units naming none (outline, lazy_ast, sparse, runs); hands the walk a
sparse module."""
