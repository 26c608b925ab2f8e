from lmeval.common import face_names
from lmeval.lock.build import DEFAULT_LIMIT as DEFAULT_LIMIT
from lmeval.lock.build import check as check
from lmeval.lock.build import default_data_dir as default_data_dir
from lmeval.lock.build import update as update
from lmeval.lock.lockfile import LOCK_PATH as LOCK_PATH

__all__ = face_names(__name__)
