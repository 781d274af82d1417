"""Readers for the non-Python files the audit rules check, each giving rows and columns."""
