"""Regexes exactly as Python's ``re`` applies them, vectorised where that is exact: a Python pattern is
translated into a Rust-regex one for polars only when both mean the same on ASCII text (``translation``),
and the column operations (``ops``: extract, substitute, case folding, strip) redo every other row with
Python's ``re``/``str``. The filters (``scorer.filters``) and the metrics (``exact_match``) use them."""

from lmeval.scorer.regex.ops import ascii_mask as ascii_mask
from lmeval.scorer.regex.ops import lower as lower
from lmeval.scorer.regex.ops import regex_extract as regex_extract
from lmeval.scorer.regex.ops import strip as strip
from lmeval.scorer.regex.ops import sub as sub
from lmeval.scorer.regex.ops import upper as upper
