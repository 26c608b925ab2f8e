"""Which model a config names, and where its files are: one rule for the compiler and the executor.

``model.path`` is a local Hugging Face model directory, or a Hub id ``org/name`` with an optional
``@revision`` (a branch, tag or commit sha; ``model.revision`` says the same). A Hub id resolves through
``huggingface_hub``'s cache (``HF_HOME``/``HF_HUB_CACHE``), offline when ``HF_HUB_OFFLINE=1``; the resolved
revision is the snapshot's commit sha. ``null`` is the built-in tiny model (``lmeval.common.tinymodel``).
A GGUF checkpoint is ``model.path=FILE.gguf``, or ``model.path=DIR`` / a Hub id with ``model.gguf_file=NAME``,
or ``model.package=PKG`` with ``model.gguf_file=NAME`` (a file an installed Python package ships, as the
``smollm2`` preset's): it is converted once into the lmeval cache (``lmeval.common.gguf``) and identified by
its sha256 (``ModelRef.tokenizer_identity`` is ``gguf-sha256:<hex>``), never by where it lies.

What a plan may record about a model is its identity, never where it lies on this machine:
``ModelRef.hub_id``, ``ModelRef.revision`` and ``ModelRef.tokenizer_identity``, and its content:
``tokenizer_hash`` (sha256 of ``tokenizer.json``: the compiler records it, execute refuses a model whose
tokenizer differs, distributed workers must load the driver's) and ``config_hash`` (of ``config.json``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from lmeval.common.errors import UserError
from lmeval.common.filehash import file_sha256, text_sha256

HUB_ID = re.compile(
    r"(?P<repo>[A-Za-z0-9][A-Za-z0-9_.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*)(?:@(?P<rev>[A-Za-z0-9_.\-/]+))?"
)


class ModelRefError(UserError):
    """A model that cannot be found: one line naming the setting."""


@dataclass(frozen=True)
class ModelRef:
    """A resolved ``model.path``."""

    dir: Path  # where config.json, the weights and tokenizer.json are on this machine
    hub_id: str | None = None  # "org/name" for a Hub model
    revision: str | None = None  # the snapshot's commit sha for a Hub model
    builtin: bool = False  # the built-in tiny model
    gguf_sha256: str | None = None  # the GGUF file this folder was converted from
    name: str | None = None  # a name from the model's content (a GGUF file's general.name), if it has one

    @property
    def tokenizer_identity(self) -> str:
        """A name for the tokenizer that holds no machine path: ``org/name@sha``, ``tiny-v1`` or the
        local directory's own name."""
        if self.builtin:
            from lmeval.common.tinymodel import RECIPE

            return RECIPE
        if self.gguf_sha256:
            return f"gguf-sha256:{self.gguf_sha256}"
        if self.hub_id:
            return f"{self.hub_id}@{self.revision}" if self.revision else self.hub_id
        return self.dir.name

    def tokenizer_hash(self) -> str | None:
        return tokenizer_hash(self.dir)

    def config_hash(self) -> str | None:
        return config_hash(self.dir)


def tokenizer_hash(model_dir: str | os.PathLike[str] | None) -> str | None:
    """The tokenizer's content identity: sha256 (hex) of the model directory's ``tokenizer.json`` bytes; None
    when there is no such file (or no directory)."""
    return _file_sha256(model_dir, "tokenizer.json")


def config_hash(model_dir: str | os.PathLike[str] | None) -> str | None:
    """sha256 (hex) of the model directory's ``config.json`` bytes; None when there is none."""
    return _file_sha256(model_dir, "config.json")


PROCESSOR_FILES = ("preprocessor_config.json", "processor_config.json")  # what sets a VLM's image processing


def processor_hash(model_dir: str | os.PathLike[str] | None) -> str | None:
    """sha256 (hex) over a vision-language model's processor settings (each of ``PROCESSOR_FILES`` present:
    its name, then its sha256); None when the directory has none (a text model)."""
    parts = [f"{n}\0{_file_sha256(model_dir, n)}\n" for n in PROCESSOR_FILES if _file_sha256(model_dir, n)]
    return text_sha256("".join(parts)) if parts else None


def _file_sha256(model_dir: str | os.PathLike[str] | None, name: str) -> str | None:
    if model_dir is None:
        return None
    f = Path(model_dir) / name
    return file_sha256(f) if f.is_file() else None


def model_name(name: object, path: object) -> str:
    """``model.name``, or when it is null: ``tiny`` for the built-in model, the Hub id's last part, the
    directory's name."""
    if name not in (None, ""):
        return str(name)
    if path in (None, ""):
        return "tiny"
    text = str(path).rstrip("/")
    m = HUB_ID.fullmatch(text)
    if m and not Path(os.path.expanduser(text)).exists():
        return m.group("repo").split("/")[1]
    return Path(text).name or "model"


def parse_hub_id(path: str, revision: str | None = None) -> tuple[str, str | None] | None:
    """``(repo_id, revision)`` when ``path`` reads as a Hub id (and is not a local directory), else None."""
    if Path(os.path.expanduser(path)).exists() or path.startswith((".", "/", "~")):
        return None
    m = HUB_ID.fullmatch(path)
    if m is None:
        return None
    rev = m.group("rev")
    if rev and revision and rev != revision:
        raise ModelRefError(f"model.path={path}: names revision {rev} but model.revision={revision}")
    return m.group("repo"), rev or revision


# what compiling needs from a Hub model: its tokenizer and configs, not its weights
TOKENIZER_FILES = ["*.json", "*.model", "*.txt", "*.tiktoken"]


def resolve_model(
    path: object,
    revision: object = None,
    setting: str = "model.path",
    need: str = "all",
    gguf_file: object = None,
    package: object = None,
) -> ModelRef:
    """The model ``model.path`` (and ``model.revision``, ``model.gguf_file``, ``model.package``) names; a
    one-line ``ModelRefError`` when it cannot be found. For a Hub id, ``need="tokenizer"`` (compile) fetches
    only the tokenizer and config files, ``need="all"`` (execute) the whole snapshot. The cache is used as is
    when it has what is needed or when ``HF_HUB_OFFLINE=1``; otherwise huggingface_hub fetches what is
    missing. A GGUF file is converted (``need="tokenizer"``: its tokenizer and config only)."""
    gguf_name = None if gguf_file in (None, "") else str(gguf_file)
    if package not in (None, ""):
        return _package_gguf(str(package), gguf_name, path, need)
    if path in (None, ""):
        if gguf_name is not None:
            raise ModelRefError(f"model.gguf_file={gguf_name}: needs model.path=DIR (or a Hub id) that holds it")
        from lmeval.common.tinymodel import ensure_tiny_model

        return ModelRef(dir=Path(ensure_tiny_model()), builtin=True)
    text = str(path)
    rev = None if revision in (None, "") else str(revision)
    hub = parse_hub_id(text, rev)
    if hub is None:
        d = Path(os.path.expanduser(text))
        if d.is_file() and gguf_name is None:
            return _from_gguf(d, need)  # any file given as the model: a GGUF checkpoint, or one line why not
        if not d.is_dir():
            raise ModelRefError(
                f"{setting}={text}: the model directory does not exist (nor is it a Hub id org/name[@revision])"
            )
        if gguf_name is not None:
            return _from_gguf(_inside(d, gguf_name, f"{setting}={text}"), need)
        return ModelRef(dir=d.resolve())
    repo, rev = hub
    if rev is not None and (".." in rev.split("/") or rev.startswith("/")):
        raise ModelRefError(f"{setting}={text}: not a revision name: {rev}")
    if gguf_name is not None:
        _inside(Path("."), gguf_name, f"{setting}={text}")  # a plain file name, checked before any download
        snap = _snapshot(repo, rev, f"{setting}={text}", [gguf_name], want=gguf_name)
        sha = snap.name if re.fullmatch(r"[0-9a-f]{40}", snap.name) else None
        ref = _from_gguf(_inside(snap, gguf_name, f"{setting}={text}"), need)
        return ModelRef(dir=ref.dir, hub_id=repo, revision=sha or rev, gguf_sha256=ref.gguf_sha256, name=ref.name)
    snap = _snapshot(repo, rev, f"{setting}={text}", TOKENIZER_FILES if need == "tokenizer" else None)
    sha = snap.name if re.fullmatch(r"[0-9a-f]{40}", snap.name) else None
    return ModelRef(dir=snap, hub_id=repo, revision=sha or rev)


def _inside(d: Path, name: str, where: str) -> Path:
    if name in (".", "..") or "/" in name or "\\" in name:
        raise ModelRefError(f"model.gguf_file={name}: a file name inside {where}, not a path")
    f = d / name
    if d != Path(".") and not f.is_file():
        raise ModelRefError(f"model.gguf_file={name}: no such file in {where}")
    return f


def _package_gguf(package: str, gguf_name: str | None, path: object, need: str) -> ModelRef:
    from lmeval.common.gguf import GGUFError, package_dir

    if path not in (None, ""):
        raise ModelRefError(f"model.package={package} and model.path={path}: set one of them, not both")
    if gguf_name is None:
        raise ModelRefError(f"model.package={package}: needs model.gguf_file=NAME (the GGUF file it ships)")
    try:
        d = package_dir(package)
    except GGUFError as e:
        raise ModelRefError(str(e)) from None
    return _from_gguf(_inside(d, gguf_name, f"model.package={package}"), need)


def _from_gguf(gguf: Path, need: str) -> ModelRef:
    """The converted folder of a GGUF file (``need="tokenizer"``: tokenizer and config only), named by content."""
    from lmeval.common.errors import InputError
    from lmeval.common.gguf import convert_gguf, file_sha256, inspect_gguf, model_name_of

    try:
        info = inspect_gguf(gguf)
        sha = file_sha256(gguf)
        d = convert_gguf(gguf, weights=need != "tokenizer", sha256=sha)
    except InputError as e:
        raise ModelRefError(str(e)) from None
    return ModelRef(dir=d, gguf_sha256=sha, name=model_name_of(info, sha))


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _snapshot(
    repo: str, revision: str | None, where: str, patterns: list[str] | None, want: str = "tokenizer.json"
) -> Path:
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HFValidationError
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        raise ModelRefError(f"{where}: a Hub id needs the huggingface_hub package") from None
    cache = hub_cache_dir()
    offline = _offline()
    if offline or patterns is not None:
        try:  # the cache first: no network for what is already here
            local = Path(snapshot_download(repo, revision=revision, local_files_only=True, cache_dir=cache))
            if offline or (local / want).is_file():
                return local
        except HFValidationError as e:
            raise ModelRefError(f"{where}: not a valid Hub id ({_first_line(e)})") from None
        except Exception as cached_miss:  # noqa: BLE001 - LocalEntryNotFoundError and friends
            if offline:
                raise ModelRefError(
                    f"{where}: revision {revision or 'main'} is not in the Hugging Face cache ({cache}) and "
                    f"HF_HUB_OFFLINE=1 ({_first_line(cached_miss)})"
                ) from None
    try:
        return Path(snapshot_download(repo, revision=revision, cache_dir=cache, allow_patterns=patterns))
    except HFValidationError as e:
        raise ModelRefError(f"{where}: not a valid Hub id ({_first_line(e)})") from None
    except Exception as e:  # noqa: BLE001 - network, auth, missing repo or revision: all one line
        raise ModelRefError(
            f"{where}: cannot fetch from the Hugging Face Hub ({type(e).__name__}: {_first_line(e)})"
        ) from None


def hub_cache_dir() -> str:
    """The Hugging Face hub cache as the environment names it now (``HF_HUB_CACHE``, else ``$HF_HOME/hub``,
    else ``~/.cache/huggingface/hub``): read at each call, not when huggingface_hub was imported."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.path.expanduser(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return os.path.join(os.path.expanduser(home), "hub")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
