"""The walk the rules see: one traversal calling every rule's visit_/leave_ methods, with the
context (aliases, scopes, bindings, guards) they ask; hands reports (engine.report) to locate."""
