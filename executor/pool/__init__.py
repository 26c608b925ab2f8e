"""Many engines on one plan (``lmeval execute --workers N``, ``--ray ADDRESS``): the Ray pool.

The public face is :class:`PoolSession` (``session.py``), which the single-process run (``executor/run.py``) hands
a plan's pending Instances to. Inside: ``chunks.py`` cuts the plan into deterministic chunks, ``worker.py`` is the
long-lived Ray actor that runs one engine through the executor's job loop, ``dispatch.py`` drives the workers and
restarts the dead, ``chunkstore.py`` checks and commits each chunk's rows as one part. Ray is imported only when a
session starts.
"""

from lmeval.common import face_names
from lmeval.executor.pool.session import PoolSession as PoolSession

__all__ = face_names(__name__)
