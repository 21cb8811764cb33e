#!/usr/bin/env bash
# Remakes test/exporters/: tiny seeded decoders of each family (scripts/exporters/tiny_models.py)
# exported by the real exporters, so that the tests run what users' files look like.
#
#   bash scripts/make-exporter-fixtures.sh [FAMILY ...]
#
# Installs the exporters' venvs through scripts/setup.sh (several GB, once), then writes
# test/exporters/<exporter>/<family>/ with the files the exporter wrote that llmc reads:
# model.onnx, config.json, generation_config.json and the tokenizer files. CI only reads the
# committed files: it needs neither torch nor transformers.
#
# Exporters: optimum (`optimum-cli export onnx --task text-generation-with-past`, defaults, and
# `--dtype fp16` for the structurally distinct families; `--task text-generation`, without the
# cache, for some),
# onnxruntime-genai's model builder (`-p fp32|fp16|int4 -e cpu`; a family the builder does not
# know is skipped, and said so; QMoE variants of a MXFP4 gpt-oss) and torch.onnx's dynamo exporter at opsets 18 and 23
# (scripts/exporters/dynamo_export.py; the structurally distinct families only, to keep the
# committed files small), and onnxruntime's weight-only quantizer (MatMulNBitsQuantizer, 4 and
# 8 bits; scripts/exporters/ort_quantize.py) on some of optimum's exports.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

bash scripts/setup.sh exporters

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
families=("$@")
family_args=()
for family in "${families[@]}"; do family_args+=(--family "$family"); done

# Each exporter reads models saved by the transformers of its own venv.
.venv-optimum/bin/python scripts/exporters/tiny_models.py "$work/hf" "${family_args[@]}"
.venv-genai/bin/python scripts/exporters/tiny_models.py "$work/hf-genai" "${family_args[@]}"

KEEP=(model.onnx config.json generation_config.json tokenizer.json tokenizer_config.json
      special_tokens_map.json)

# optimum-onnx: the default export of a decoder with its KV cache, and for some families the
# same with --dtype fp16.
OPTIMUM_FP16_FAMILIES="llama-gqa gemma gpt2 phi3 qwen3 stablelm qwen3-moe gptj cohere bloom mpt"
OPTIMUM_FP16_FAMILIES+=" gpt-neo deepseek-v3"
# gpt-oss-mxfp4's MXFP4 experts matter only to the genai builder's int4 export: optimum (and
# the builder at fp32 and fp16) would write gpt-oss's form again, over other weights.
MXFP4_FAMILIES="gpt-oss-mxfp4"
# Families optimum-onnx has no export config for (`optimum-cli` refuses their model type).
OPTIMUM_UNSUPPORTED_FAMILIES="ernie hunyuan hunyuan-moe ernie-moe mixtral qwen2-moe olmoe starcoder2"
OPTIMUM_UNSUPPORTED_FAMILIES+=" glm4 cohere2 olmo3 granitemoe phimoe exaone4 glm4-moe seed-oss"
for model in "$work"/hf/*/; do
  family=$(basename "$model")
  [[ " $MXFP4_FAMILIES $OPTIMUM_UNSUPPORTED_FAMILIES " == *" $family "* ]] && continue
  out=$ROOT/test/exporters/optimum/$family
  echo "make-exporter-fixtures: optimum $family"
  .venv-optimum/bin/optimum-cli export onnx --model "$model" \
    --task text-generation-with-past "$work/optimum/$family" >"$work/optimum-$family.log" 2>&1 \
    || { cat "$work/optimum-$family.log" >&2; exit 1; }
  rm -rf "$out" && mkdir -p "$out"
  for file in "${KEEP[@]}"; do
    [[ -f $work/optimum/$family/$file ]] && cp "$work/optimum/$family/$file" "$out/"
  done
  if [[ -f $work/optimum/$family/model.onnx_data ]]; then
    echo "make-exporter-fixtures: $family has external data: too large to commit" >&2
    exit 1
  fi
  # --dtype fp16, for the structurally distinct families only (the files add up).
  [[ " $OPTIMUM_FP16_FAMILIES " == *" $family "* ]] || continue
  out=$ROOT/test/exporters/optimum-fp16/$family
  echo "make-exporter-fixtures: optimum fp16 $family"
  rm -rf "$out"
  if ! .venv-optimum/bin/optimum-cli export onnx --model "$model" --dtype fp16 \
      --task text-generation-with-past "$work/optimum-fp16/$family" \
      >"$work/optimum-fp16-$family.log" 2>&1; then
    echo "make-exporter-fixtures: optimum does not export $family at fp16: $(tail -n 1 "$work/optimum-fp16-$family.log")"
    continue
  fi
  mkdir -p "$out"
  for file in "${KEEP[@]}"; do
    [[ -f $work/optimum-fp16/$family/$file ]] && cp "$work/optimum-fp16/$family/$file" "$out/"
  done
done
# optimum-onnx at another task, into test/exporters/FOLDER/<family>, from the models in
# $OPTIMUM_SOURCE (default: the causal LMs in $work/hf):
#   optimum_task TASK FOLDER FAMILY...
optimum_task() {
  local task=$1 folder=$2 family source=${OPTIMUM_SOURCE:-$work/hf}
  shift 2
  for family in "$@"; do
    [[ -d $source/$family ]] || continue
    local out=$ROOT/test/exporters/$folder/$family log=$work/$folder-$family.log
    echo "make-exporter-fixtures: optimum $task $family"
    .venv-optimum/bin/optimum-cli export onnx --model "$source/$family" --task "$task" \
      "$work/$folder/$family" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
    rm -rf "$out" && mkdir -p "$out"
    for file in "${KEEP[@]}"; do
      [[ -f $work/$folder/$family/$file ]] && cp "$work/$folder/$family/$file" "$out/"
    done
  done
}
# Without the cache (`--task text-generation`: the graph takes the token ids and recomputes
# every token, as a plain export of forward() does), for the structurally distinct families:
# llmc adds the cache.
optimum_task text-generation optimum-no-cache llama-gqa qwen3 gemma2 mistral-window gpt2 mpt \
  bloom opt falcon gpt-neox phi3 qwen3-moe deepseek-v3 gpt-oss
# Without the LM head (`--task feature-extraction`, returning last_hidden_state), as embedding
# models (Qwen3-Embedding, gte-Qwen2, e5-mistral) are exported.
optimum_task feature-extraction optimum-feature-extraction qwen3 qwen2 mistral
# optimum-onnx's `--task text-classification` export of the classifiers of LABELS labels
# that tiny_models.py builds of the FAMILIES asked for, into test/exporters/FOLDER/<family>:
#   classifier_exports LABELS FOLDER FAMILY...
classifier_exports() {
  local labels=$1 folder=$2 family args=()
  shift 2
  for family in "$@"; do
    if (( ${#families[@]} == 0 )) || [[ " ${families[*]} " == *" $family "* ]]; then
      args+=(--family "$family")
    fi
  done
  (( ${#args[@]} )) || return 0
  .venv-optimum/bin/python scripts/exporters/tiny_models.py "$work/hf-$folder" \
    --labels "$labels" "${args[@]}"
  OPTIMUM_SOURCE=$work/hf-$folder optimum_task text-classification "$folder" "$@"
}
# Sequence classifiers (a *ForSequenceClassification model of 3 labels, whose graph pools
# each row's last token that is not the pad token), as reward models are exported.
classifier_exports 3 optimum-text-classification qwen3 llama-gqa gemma2 mistral gpt2 opt
# Cross-encoders (rerankers): classifiers of one label, whose score /score and /rerank serve.
classifier_exports 1 optimum-reranker qwen3 llama-gqa
# sentence-transformers embedding models (modules.json: the transformer, its pooling,
# Normalize), as Qwen3-Embedding and e5-mistral are published: optimum exports them with the
# pooling and the normalisation in the graph (`sentence_embedding`). Last-token pooling, and
# mean pooling (which llmc refuses) into <family>-mean.
for pooling in lasttoken mean; do
  suffix=$([[ $pooling == mean ]] && echo "-mean" || true)
  for family in qwen3 mistral; do
    [[ $pooling == mean && $family != qwen3 ]] && continue
    if (( ${#families[@]} )) && [[ " ${families[*]} " != *" $family "* ]]; then continue; fi
    .venv-optimum/bin/python scripts/exporters/tiny_models.py "$work/hf-st-$pooling" \
      --family "$family" --sentence-transformers "$pooling"
    [[ -z $suffix ]] || mv "$work/hf-st-$pooling/$family" "$work/hf-st-$pooling/$family$suffix"
    OPTIMUM_SOURCE=$work/hf-st-$pooling optimum_task feature-extraction \
      optimum-sentence-transformers "$family$suffix"
  done
done
# LoRA adapters (PEFT, seeded at random: scripts/exporters/lora_adapters.py) of the causal LMs
# of LORA_FAMILIES, each beside optimum's export of the model it merges into:
# test/exporters/optimum-lora/<family>/<adapter>/ holds adapter_config.json,
# adapter_model.safetensors and merged/model.onnx; the base model's export is
# test/exporters/optimum/<family>, made above from the same model.
LORA_FAMILIES="llama-gqa"
for family in $LORA_FAMILIES; do
  [[ -d $work/hf/$family ]] || continue
  .venv-optimum/bin/python scripts/exporters/lora_adapters.py "$work/hf/$family" \
    "$work/lora/$family"
  out=$ROOT/test/exporters/optimum-lora/$family
  rm -rf "$out"
  for merged in "$work/lora/$family"/*-merged; do
    adapter=$(basename "$merged" -merged)
    mkdir -p "$out/$adapter/merged"
    cp "$work/lora/$family/$adapter"/{adapter_config.json,adapter_model.safetensors} \
      "$out/$adapter/"
    log=$work/lora-$family-$adapter.log
    .venv-optimum/bin/optimum-cli export onnx --model "$merged" \
      --task text-generation-with-past "$work/lora-onnx/$family/$adapter" >"$log" 2>&1 \
      || { cat "$log" >&2; exit 1; }
    cp "$work/lora-onnx/$family/$adapter"/{model.onnx,config.json} "$out/$adapter/merged/"
  done
done
# onnxruntime-genai's model builder, for the CPU at each precision. Its weights go to
# model.onnx.data beside model.onnx, as users receive them.
GENAI_KEEP=(model.onnx model.onnx.data genai_config.json tokenizer.json tokenizer_config.json
            special_tokens_map.json)
# The builder writes Mistral's attention without its sliding window (local_window_size -1):
# mistral-window's export would be mistral's again.
GENAI_SKIP_FAMILIES="mistral-window"
for model in "$work"/hf-genai/*/; do
  family=$(basename "$model")
  [[ " $GENAI_SKIP_FAMILIES " == *" $family "* ]] && continue
  # name -> the builder's options. A MXFP4 checkpoint's int4 export holds QMoE: by default
  # 4-bit codes scaled per block of 32; also 8-bit codes (moe_quant_type=int8) and a scale
  # per row (qmoe_block_size=0).
  declare -A variants=([fp32]="-p fp32" [fp16]="-p fp16" [int4]="-p int4")
  if [[ " $MXFP4_FAMILIES " == *" $family "* ]]; then
    variants=([int4]="-p int4" [int4-qmoe8]="-p int4 --extra_options moe_quant_type=int8"
              [int4-qmoe-rows]="-p int4 --extra_options qmoe_block_size=0")
  fi
  for variant in "${!variants[@]}"; do
    out=$ROOT/test/exporters/genai-$variant/$family
    log=$work/genai-$variant-$family.log
    echo "make-exporter-fixtures: genai $variant $family"
    # shellcheck disable=SC2086  # the options are words
    if ! .venv-genai/bin/python -m onnxruntime_genai.models.builder -i "$model" \
        -o "$work/genai-$variant/$family" ${variants[$variant]} -e cpu -c "$work/cache" \
        >"$log" 2>&1; then
      echo "make-exporter-fixtures: the genai builder does not export $family: $(tail -n 1 "$log")"
      rm -rf "$out"
      continue
    fi
    rm -rf "$out" && mkdir -p "$out"
    for file in "${GENAI_KEEP[@]}"; do
      [[ -f $work/genai-$variant/$family/$file ]] && cp "$work/genai-$variant/$family/$file" "$out/"
    done
  done
done
# torch.onnx's dynamo exporter (through transformers' OnnxExporter), with the KV cache.
declare -A DYNAMO_FAMILIES=(
  [18]="llama-gqa gemma gpt2 phi3 qwen3 stablelm gpt-neox opt gpt-bigcode gptj codegen cohere
        cohere-qk-norm bloom mpt gpt-neo ernie hunyuan qwen3-moe hunyuan-moe ernie-moe gpt-oss
        gemma2 gemma3 olmo olmo2 smollm3 nemotron glm phi2 granite qwen2-yarn phi3-longrope
        mixtral qwen2-moe olmoe starcoder2 glm4 cohere2 olmo3 granitemoe phimoe exaone4 glm4-moe
        seed-oss"
  [23]="llama-gqa gemma gpt2 qwen3"
)
for opset in 18 23; do
  for family in ${DYNAMO_FAMILIES[$opset]}; do
    model=$work/hf-genai/$family
    [[ -d $model ]] || continue
    out=$ROOT/test/exporters/dynamo-opset$opset/$family
    log=$work/dynamo-$opset-$family.log
    echo "make-exporter-fixtures: dynamo opset $opset $family"
    .venv-genai/bin/python scripts/exporters/dynamo_export.py "$model" \
      "$work/dynamo-$opset/$family" --opset "$opset" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
    rm -rf "$out" && mkdir -p "$out"
    cp "$work/dynamo-$opset/$family"/{model.onnx,model.onnx.data,config.json} "$out/"
  done
done
# The same exporter on forward() without the cache (use_cache=False, no past inputs).
for family in llama-gqa gpt2 gemma2 qwen3 mpt phi3; do
  out=$ROOT/test/exporters/dynamo-opset18-no-cache/$family
  log=$work/dynamo-no-cache-$family.log
  echo "make-exporter-fixtures: dynamo opset 18 without the cache $family"
  .venv-genai/bin/python scripts/exporters/dynamo_export.py "$work/hf-genai/$family" \
    "$work/dynamo-no-cache/$family" --opset 18 --no-cache >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
  rm -rf "$out" && mkdir -p "$out"
  cp "$work/dynamo-no-cache/$family"/{model.onnx,model.onnx.data,config.json} "$out/"
done
# onnxruntime's weight-only quantizer on optimum's exports: the MatMulNBits and
# GatherBlockQuantized forms users make from an fp32 export, and its QDQ form (blocked
# DequantizeLinear feeding MatMul) (scripts/exporters/ort_quantize.py).
declare -A ORT_QUANTIZED=(
  [ort-int4]="--bits 4 --block-size 32|llama-gqa llama-tied phi2 qwen3-moe"
  [ort-int4-sym]="--bits 4 --block-size 16 --symmetric|llama-tied qwen3"
  [ort-int8]="--bits 8 --block-size 128 --symmetric|llama-gqa gemma qwen3-moe"
  [ort-qdq-int4]="--bits 4 --block-size 32 --qdq|llama-gqa qwen3"
  [ort-qdq-int4-sym]="--bits 4 --block-size 16 --symmetric --qdq|llama-tied"
)
for name in "${!ORT_QUANTIZED[@]}"; do
  IFS='|' read -r options quantized_families <<<"${ORT_QUANTIZED[$name]}"
  for family in $quantized_families; do
    source_dir=$ROOT/test/exporters/optimum/$family
    [[ -f $source_dir/model.onnx ]] || continue
    out=$ROOT/test/exporters/$name/$family
    echo "make-exporter-fixtures: onnxruntime quantizer $name $family"
    rm -rf "$out" && mkdir -p "$out"
    # shellcheck disable=SC2086  # the options are words
    .venv-genai/bin/python scripts/exporters/ort_quantize.py "$source_dir/model.onnx" \
      "$out/model.onnx" $options >"$work/$name-$family.log" 2>&1 \
      || { cat "$work/$name-$family.log" >&2; exit 1; }
    for file in "${KEEP[@]}"; do
      [[ $file != model.onnx && -f $source_dir/$file ]] && cp "$source_dir/$file" "$out/"
    done
  done
done
echo "make-exporter-fixtures: wrote test/exporters/"
