"""Token ids and plan encoding: the model a plan is compiled for (``modelinfo``), its tokenizer at compile time
(``tokenizer``, with ``bytelevel`` pre-tokenization), a built task's plan records as bytes (``plan_records``), the
plan header's compile-time parts (``header``) and where a plan file is written (``destination``). Names are
imported lazily (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmeval.common import lazy_face

if TYPE_CHECKING:
    from lmeval.compiler.encode.destination import plan_path as plan_path
    from lmeval.compiler.encode.header import plain_data as plain_data
    from lmeval.compiler.encode.header import plan_header as plan_header
    from lmeval.compiler.encode.header import task_summary as task_summary
    from lmeval.compiler.encode.modelinfo import load_model_info as load_model_info
    from lmeval.compiler.encode.plan_records import Record as Record
    from lmeval.compiler.encode.plan_records import task_records as task_records
    from lmeval.compiler.encode.tokenizer import ModelTokenizer as ModelTokenizer

__all__, __getattr__, __dir__ = lazy_face(__name__)
