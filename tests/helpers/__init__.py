"""Helpers the tests share: git commands, response shapes, silent servers, chat drivers."""
