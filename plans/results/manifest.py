"""The results contract: what the executor writes and the scorer reads.

A results directory holds ``manifest.json`` (a RunManifest) and Parquet parts ``part-*.parquet``, each
written atomically, one row per Instance with the columns of ``RESULT_COLUMNS``. Resume and merge key on
``instance_id``; a directory belongs to exactly one plan (``plan_hash``).

``read_parts`` is the one reader of result rows (the scorer, resume, merge, ``--reuse`` and the report all
read through it): the columns asked for, cast to this schema, with the part each row came from; a part that
cannot be read, or lacks a column, is a one-line error naming it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmeval.common import json_text, write_atomic
from lmeval.plans.errors import PlanError
from lmeval.plans.limits import MAX_MANIFEST_BYTES, InputError, loads_json, open_regular
from lmeval.plans.results.partsum import verify_parts

if TYPE_CHECKING:
    import polars as pl

MANIFEST = "manifest.json"
PART_GLOB = "part-*.parquet"
PART = "part"  # the column ``read_parts`` adds: the index (into the list of part files) of a row's file

# name -> polars dtype name; the order is the column order of every part
RESULT_COLUMNS: dict[str, str] = {
    "instance_id": "String",  # the plan's Instance id (hex; instance_id_for(task, doc_id, idx))
    "task": "String",  # the task the Instance belongs to
    "doc_id": "Int64",  # the document's id within its task
    "idx": "Int64",  # the Instance's index within its document (a choice of a multiple-choice question)
    "request_type": "String",  # loglikelihood | loglikelihood_rolling | generate_until
    "request_hash": "String",  # the plan's hash of exactly what the model was asked
    "loglikelihood": "Float64",  # loglikelihood(_rolling): summed log-prob of the continuation
    "is_greedy": "Boolean",  # loglikelihood: every continuation token was the argmax
    "n_continuation_tokens": "Int64",  # tokens scored (loglikelihood) or generated (first sample)
    "response": "String",  # generate_until: the (first) generated text
    "responses": "List(String)",  # generate_until: all repeats' texts, in order
    "finish_reason": "String",  # generate_until: stop | length | ...
    # generate_until, optional (parts written before them read as null): the first response's generated tokens
    # before its reasoning ends under the plan's run.reasoning (executor/answers.py); under a thinking budget
    # (plans/vocab/budgets.py) whether the end marker was forced because the budget ran out
    "reasoning_tokens": "Int64",  # generate_until: first response's tokens before its reasoning ends
    "thinking_forced": "Boolean",  # generate_until: the end marker was forced (the thinking budget ran out)
    # optional (parts written before it read as null): where the row's answer came from (``ANSWER_SOURCES``)
    "source": "String",  # computed (by this run's engine) | stored (the result store) | reused (--reuse DIR)
}
OPTIONAL_COLUMNS = ("reasoning_tokens", "thinking_forced", "source")
ANSWER_SOURCES = ("computed", "stored", "reused")  # the values of ``source`` (executor/ANSWERSTORE.md)


def polars_schema() -> dict[str, Any]:
    import polars as pl

    types: dict[str, Any] = {
        "String": pl.String,
        "Int64": pl.Int64,
        "Float64": pl.Float64,
        "Boolean": pl.Boolean,
        "List(String)": pl.List(pl.String),
    }
    return {name: types[t] for name, t in RESULT_COLUMNS.items()}


# the CPU flags a vector kernel is chosen by (``/proc/cpuinfo``): recorded in ``KernelPath.cpu_flags``
VECTOR_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni", "amx_tile", "amx_bf16", "amx_int8",
                "asimd", "sve", "sve2")  # fmt: skip


@dataclass
class KernelPath:
    """What one engine computed with, beyond the plan, the model and the engine arguments: the last bits of its
    floats depend on these (docs/explanation/what-repeats.md)."""

    cpu: str = ""  # the CPU's model name
    cpu_flags: list[str] = field(default_factory=list)  # those of VECTOR_FLAGS the CPU has
    torch_cpu_capability: str | None = None  # torch.backends.cpu.get_cpu_capability(): DEFAULT, AVX2, AVX512, ...
    aten_cpu_capability: str | None = None  # $ATEN_CPU_CAPABILITY when set (it caps torch's level)
    vllm_kernels: str | None = None  # vLLM's CPU kernel library in use: _C (AVX-512 + BF16), _C_AVX512, _C_AVX2
    vllm_batch_invariant: bool | None = None  # vLLM's batch-invariant mode ($VLLM_BATCH_INVARIANT); None: no vLLM
    gpus: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Any) -> KernelPath:
        if not isinstance(d, dict) or set(d) - {f.name for f in fields(cls)}:
            raise ValueError(f"field 'numerics.kernel_paths' holds {_json_type(d)} {str(d)[:40]!r}, not a kernel path")
        ok = {
            "cpu": lambda v: isinstance(v, str),
            "cpu_flags": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
            "gpus": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
            "vllm_batch_invariant": lambda v: v is None or isinstance(v, bool),
        }
        for k, v in d.items():
            if not ok.get(k, lambda v: v is None or isinstance(v, str))(v):
                raise ValueError(f"field 'numerics.kernel_paths.{k}' has the wrong type ({_json_type(v)})")
        return cls(**d)


@dataclass
class Numerics:
    """What a results directory's floats depend on besides the plan and the model (``manifest.numerics``):
    every distinct kernel path that computed its rows (first run, resumed runs, every worker, every shard
    of a merge) and how the run was cut (workers, chunk size, part size)."""

    kernel_paths: list[KernelPath] = field(default_factory=list)
    workers: int = 1  # engines (``execute --workers``); 1 for a single-process run
    chunk_size: int | None = None  # Instances per chunk on a pool (executor/chunks.py); None: one engine
    part_size: int | None = None  # rows per Parquet part (``--part-size``); None: several (a merge)

    def add(self, path: KernelPath) -> None:
        if path not in self.kernel_paths:
            self.kernel_paths.append(path)

    @classmethod
    def from_dict(cls, d: Any) -> Numerics:
        if not isinstance(d, dict) or set(d) - {f.name for f in fields(cls)}:
            raise ValueError(f"field 'numerics' has the wrong type or shape ({_json_type(d)} {str(d)[:40]!r})")
        paths = d.get("kernel_paths", [])
        if not isinstance(paths, list):
            raise ValueError(f"field 'numerics.kernel_paths' has the wrong type ({_json_type(paths)})")
        for k in ("workers", "chunk_size", "part_size"):
            v = d.get(k)
            if not (v is None and k != "workers" or k not in d or type(v) is int and v >= 1):
                raise ValueError(f"field 'numerics.{k}' has the wrong type or value ({_json_type(v)} {str(v)[:40]!r})")
        return cls(**{**d, "kernel_paths": [KernelPath.from_dict(x) for x in paths]})


@dataclass
class RunManifest:
    plan_hash: str
    plan_path: str
    model: dict[str, Any]  # name, path, revision/identity, tokenizer hash
    backend: str
    engine_args: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)  # lmeval, vllm, torch, transformers
    shard: str | None = None  # "i/n" when the run covers one shard
    n_instances: int = 0  # instances this run is responsible for
    started: str | None = None
    finished: str | None = None
    stats: dict[str, int] = field(default_factory=dict)  # executed, stored, reused, resumed, ... (counts of instances)
    hardware: dict[str, Any] = field(default_factory=dict)  # platform, cpu, cpus, memory_gib, gpus (report)
    # how it ran when spread over workers (executor/pool/): workers, chunk size, chunks per node,
    # retries; empty for a single-process run
    execution: dict[str, Any] = field(default_factory=dict)
    platform: dict[str, Any] = field(default_factory=dict)  # kind, device_count, device_names (engine's)
    numerics: Numerics = field(default_factory=Numerics)  # what the floats depend on (kernel paths, cutting)
    # the bill before the run (executor/estimate.py): the token estimate of what this run computed, beside
    # ``stats``' counts; empty in manifests written before it, or when nothing ran
    estimate: dict[str, Any] = field(default_factory=dict)
    store: dict[str, Any] = field(default_factory=dict)  # the result store: path (when on), model_key, seed

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunManifest:
        """The manifest ``d`` describes; ``ValueError`` naming the first field of the wrong type or shape."""
        if not isinstance(d, dict):
            raise ValueError(f"expected a JSON object, got {_json_type(d)}")
        names = {f.name for f in fields(cls)}
        for k in ("plan_hash", "plan_path", "model", "backend"):
            if k not in d:
                raise ValueError(f"field {k!r} is missing")
        for k, v in d.items():
            if k in _FIELD_TYPES and not _FIELD_TYPES[k](v):
                raise ValueError(f"field {k!r} has the wrong type or shape ({_json_type(v)} {str(v)[:40]!r})")
        kept = {k: v for k, v in d.items() if k in names}
        if "numerics" in kept:
            kept["numerics"] = Numerics.from_dict(kept["numerics"])
        return cls(**kept)


def plan_named(results_dir: str | os.PathLike[str], name: str, override: str | None = None) -> str:
    """The plan file a run names (the one rule every reader of a results directory uses): ``override``
    (``--plan``) as given; else ``name`` as the run records it, absolute as is, relative as given (from the
    working directory) when it is there, else beside the run; "" when neither names one."""
    if override:
        return override
    if not name:
        return ""
    p = Path(name)
    if not p.is_absolute() and not p.exists() and (Path(results_dir) / p).exists():
        p = Path(results_dir) / p
    return os.fspath(p)


def require_plan(results_dir: str | os.PathLike[str], path: str) -> str:
    """``path`` (``plan_named``'s answer) when it is a plan file; PlanError when no plan is named or the file is
    not there."""
    if not path:
        raise PlanError(f"{results_dir}: manifest names no plan; pass --plan PLAN")
    if not Path(path).is_file():
        raise PlanError(
            f"{results_dir}: plan {Path(path)} not found; pass --plan PLAN (results are checked against their plan)"
        )
    return os.fspath(Path(path))


def plan_of(results_dir: str | os.PathLike[str], manifest: RunManifest, override: str | None = None) -> str:
    """The plan a results directory's rows are checked against: ``override`` (``--plan``), else the
    manifest's ``plan_path`` (``plan_named``). Raises PlanError when it is not there; the caller checks its
    ``plan_hash`` against the manifest's."""
    return require_plan(results_dir, plan_named(results_dir, manifest.plan_path, override))


def _json_type(v: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(
        type(v), "null" if v is None else type(v).__name__
    )


def shard_problem(text: Any) -> str | None:
    """Why ``text`` is not a shard ``"I/N"`` (decimal integers, 0 <= I < N), or None."""
    if not isinstance(text, str):
        return f"expected a string I/N, got {_json_type(text)}"
    i, sep, n = text.partition("/")
    if not (sep and i.isascii() and i.isdigit() and n.isascii() and n.isdigit() and len(text) <= 41):
        return f"expected I/N with whole numbers, got {text[:40]!r}"
    if not 0 <= int(i) < int(n):
        return f"expected 0 <= I < N, got {text!r}"
    return None


def _str_map(v: Any, values: type) -> bool:
    return isinstance(v, dict) and all(isinstance(x, values) and type(x) is not bool or x is None for x in v.values())


# the type (and shape) rules of manifest fields: a forged manifest fails here, with its field named
_FIELD_TYPES: dict[str, Any] = {
    "plan_hash": lambda v: isinstance(v, str) and 0 < len(v) <= 128 and all(c in "0123456789abcdef" for c in v),
    "plan_path": lambda v: isinstance(v, str),
    "model": lambda v: isinstance(v, dict),
    "backend": lambda v: isinstance(v, str),
    "engine_args": lambda v: isinstance(v, dict),
    "versions": lambda v: isinstance(v, dict) and all(isinstance(x, str) or x is None for x in v.values()),
    "shard": lambda v: v is None or shard_problem(v) is None,
    "n_instances": lambda v: type(v) is int and v >= 0,
    "started": lambda v: v is None or isinstance(v, str),
    "finished": lambda v: v is None or isinstance(v, str),
    "stats": lambda v: _str_map(v, int),
    "hardware": lambda v: isinstance(v, dict),
    "execution": lambda v: isinstance(v, dict),
    "platform": lambda v: isinstance(v, dict),
    "estimate": lambda v: isinstance(v, dict),
    "store": lambda v: isinstance(v, dict),
}


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> None:
    text = json_text(data, indent=2, sort_keys=True) + "\n"
    write_atomic(path, lambda f: f.write(text.encode("utf-8")))


def read_manifest(results_dir: str | os.PathLike[str]) -> RunManifest:
    """The manifest of ``results_dir`` (``read_manifest_fields``, typed)."""
    return read_manifest_fields(results_dir)[0]


def read_manifest_fields(results_dir: str | os.PathLike[str]) -> tuple[RunManifest, dict[str, Any]]:
    """The one reader of a run's manifest: the typed manifest of ``results_dir`` and the JSON object as the file
    holds it (every field, those of later versions too, for displays that show them all); ``PlanError`` (one line
    naming the file and field) for anything that is not a manifest: missing, not a regular file, over the size
    limit, not UTF-8 JSON within ``plans.limits``, not an object, or a field of the wrong type."""
    p = Path(results_dir) / MANIFEST
    if not os.path.lexists(p):
        raise PlanError(f"{results_dir}: not a results directory (no {MANIFEST})")
    try:
        with open_regular(p, max_bytes=MAX_MANIFEST_BYTES, what="manifest") as f:
            data = f.read()
    except InputError as e:
        raise PlanError(str(e)) from None
    except OSError as e:
        raise PlanError(f"{p}: cannot read the manifest: {e.strerror or e}") from None
    try:
        doc = loads_json(data)
        return RunManifest.from_dict(doc), doc
    except (ValueError, TypeError) as e:
        raise PlanError(f"{p}: malformed manifest: {e}") from None


def write_manifest(results_dir: str | os.PathLike[str], manifest: RunManifest) -> None:
    write_json_atomic(Path(results_dir) / MANIFEST, manifest.to_dict())


def part_files(results_dir: str | os.PathLike[str]) -> list[Path]:
    return sorted(Path(results_dir).glob(PART_GLOB))


def read_parts(parts: Sequence[str | os.PathLike[str]], columns: Sequence[str] = tuple(RESULT_COLUMNS)) -> pl.DataFrame:
    """``columns`` of every row of ``parts`` (cast to the results schema, in file order) and ``PART``, the
    index into ``parts`` of the file each row came from: one lazy scan. ``PlanError`` naming the first part
    that cannot be read, lacks a column or holds one of another type."""
    import polars as pl

    schema = {c: polars_schema()[c] for c in columns}
    verify_parts(parts)  # regular files whose bytes hash to the checksum in their names (plans/results/partsum.py)
    if not parts:
        return pl.DataFrame(schema={**schema, PART: pl.Int32})

    def scan(i: int, p: str | os.PathLike[str]) -> pl.LazyFrame:
        frame = pl.scan_parquet(os.fspath(p), glob=False)
        if "instance_id" in schema:
            _check_id_type(p, frame.collect_schema())
        if any(c in OPTIONAL_COLUMNS for c in schema):
            have = set(frame.collect_schema().names())
            missing = [c for c in schema if c in OPTIONAL_COLUMNS and c not in have]
            frame = frame.with_columns([pl.lit(None, dtype=schema[c]).alias(c) for c in missing])
        frame = frame.select(list(schema)).cast(schema)  # type: ignore[arg-type]
        return frame.with_columns(pl.lit(i, dtype=pl.Int32).alias(PART))

    try:
        return pl.concat([scan(i, p) for i, p in enumerate(parts)], how="vertical").collect()
    except PlanError:
        raise
    except Exception:  # noqa: BLE001 - any unreadable or foreign file is the same user error, named below
        pass
    for i, p in enumerate(parts):  # which part: each on its own
        try:
            scan(i, p).collect()
        except Exception as e:  # noqa: BLE001
            msg = " ".join(str(e).split())[:200]
            raise PlanError(f"{os.fspath(p)}: unreadable result part ({type(e).__name__}: {msg})") from None
    raise PlanError(f"{Path(parts[0]).parent}: unreadable result parts (each reads alone, not together)")


def _check_id_type(part: str | os.PathLike[str], schema: Any) -> None:
    """A part's ``instance_id`` column holds strings (or only nulls, refused row by row in ``plans.rowcheck``):
    an id of another type would be cast to a string and look like an Instance of no plan."""
    import polars as pl

    dtype = schema.get("instance_id")
    if dtype is not None and dtype not in (pl.String, pl.Null):
        raise PlanError(f"{os.fspath(part)}: field instance_id is {dtype}, expected a string (the Instance's id)")


def read_results(results_dir: str | os.PathLike[str]) -> pl.DataFrame:
    """All rows of a results directory (``RESULT_COLUMNS``, sorted by task, doc_id, idx).

    Raises PlanError when a part cannot be read or an instance id occurs twice.
    """
    import polars as pl

    df = read_parts(part_files(results_dir)).drop(PART)
    dup = df.filter(pl.col("instance_id").is_duplicated())
    if dup.height:
        first = dup.row(0, named=True)
        raise PlanError(
            f"{results_dir}: instance {first['instance_id']} ({first['task']} doc {first['doc_id']}) "
            f"appears {dup.height} times"
        )
    return df.sort(["task", "doc_id", "idx"])
