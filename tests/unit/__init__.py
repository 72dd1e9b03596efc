"""Tests of the dlbench package, a module or a feature at a time (tiny real runs included)."""
