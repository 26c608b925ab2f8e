"""The compile of a chained plan's next stage (#56, plans/plan/chain.py): stage k's plan and results in, stage k+1's
plan out (each multi-turn conversation continued with the model's answer and the next user turn, chat-templated
and tokenized for the same model). ``compile_next`` is the entry point (its plan is None when every conversation
has ended)."""

from __future__ import annotations

from lmeval.common import face_names
from lmeval.compiler.chain.build import StageCompiled as StageCompiled
from lmeval.compiler.chain.build import compile_next as compile_next

__all__ = face_names(__name__)
