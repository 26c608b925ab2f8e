"""Tests of compiler/build/ (the folder is not named build: pytest does not collect folders of that name)."""
