"""Language models: the one litellm door every engine uses, and a local llama.cpp server for
tests and demos.

Part of the foundation: may import :mod:`kbmem.errors` and :mod:`kbmem.textutil` only.
"""
