"""Switches that tests turn off to compare the compiler's fast paths with its general ones."""

from __future__ import annotations

# Off only in tests: the general path, which the fast one must match exactly.
SPLIT_OUTPUT = True

# Off only in tests: loops that only output text and their variable stay loops.
FUSE_LOOPS = True
