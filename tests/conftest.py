"""Suite-wide settings: the tests never touch the network (CI has none), so Hugging Face libraries are told
so up front instead of retrying the Hub."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
