"""`cudalint lsp`: a language server that publishes cudalint's findings as diagnostics and
offers its fixes as code actions (needs `cudalint[lsp]`: pygls and lsprotocol)."""
