"""Round trip of ``lmeval export --format eee`` files through every-eval-ever's own reader (its Pydantic models).

every-eval-ever 0.3.0 needs Python >= 3.12, and lmeval's environment is 3.11, so this is not a pytest test; run it
from a separate environment that has the package, on an export folder::

    python3.12 -m venv /tmp/eee && /tmp/eee/bin/pip install every-eval-ever==0.3.0
    lmeval export RESULTS --format eee -o OUT
    /tmp/eee/bin/every_eval_ever validate 'OUT/data/**/*.json' 'OUT/data/**/*.jsonl'
    /tmp/eee/bin/python tests/report/eee_reader_check.py OUT

Every aggregate file and instance line is loaded into ``EvaluationLog`` / ``InstanceLevelEvaluationLog`` and
dumped back; scores, ids, prompts and lmeval's provenance (plan hash, request hashes) must survive.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(folder: str) -> int:
    from every_eval_ever.eval_types import EvaluationLog
    from every_eval_ever.instance_level_types import InstanceLevelEvaluationLog

    n_agg = n_inst = 0
    for p in sorted(Path(folder).rglob("*.json")):
        raw = json.loads(p.read_text(encoding="utf-8"))
        back = json.loads(EvaluationLog.model_validate(raw).model_dump_json(exclude_none=True))
        scores = [r["score_details"]["score"] for r in raw["evaluation_results"]]
        assert [r["score_details"]["score"] for r in back["evaluation_results"]] == scores, p
        assert back["eval_library"]["additional_details"] == raw["eval_library"]["additional_details"], p
        n_agg += 1
        for line in p.with_name(f"{p.stem}_samples.jsonl").read_text(encoding="utf-8").splitlines():
            x = json.loads(line)
            b = json.loads(InstanceLevelEvaluationLog.model_validate(x).model_dump_json(exclude_none=True))
            for key in ("sample_id", "sample_hash", "evaluation", "input", "metadata"):
                want = {k: v for k, v in x[key].items() if v is not None} if isinstance(x[key], dict) else x[key]
                assert b[key] == want, (p, key)
            n_inst += 1
    print(f"round trip ok: {n_agg} aggregate files, {n_inst} instance lines")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
