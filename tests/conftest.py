"""Suite-wide settings: the tests never touch the network (CI has none), so Hugging Face libraries are told
so up front instead of retrying the Hub. Compiles build every task in-process and skip the build cache (no
entries written to the user's cache, no forked workers under pytest's capture), unless a test asks for them
(tests/compiler/cache/test_build_cache.py)."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("LMEVAL_BUILD_CACHE", "0")
os.environ.setdefault("LMEVAL_VERIFIED_PLANS", "0")  # every read fully checked (tests/plans/test_verified.py: on)
os.environ.setdefault("LMEVAL_COMPILE_JOBS", "1")
