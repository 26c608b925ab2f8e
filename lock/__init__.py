from lmeval.lock.build import DEFAULT_LIMIT, check, default_data_dir, update
from lmeval.lock.lockfile import LOCK_PATH

__all__ = [
    "DEFAULT_LIMIT",
    "LOCK_PATH",
    "check",
    "default_data_dir",
    "update",
]
