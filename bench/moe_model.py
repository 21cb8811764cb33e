"""A benchmark-sized mixture of experts with seeded random weights, exported by optimum-onnx.

    .venv-optimum/bin/python bench/moe_model.py OUT_DIR [--family qwen3-moe|gpt-oss|deepseek-v3]
        [--genai] [--mxfp4]

writes OUT_DIR/hf (the transformers model) and OUT_DIR/onnx (optimum's export, model.onnx
and its external data) for bench/cpu_throughput.py to run through llmc and onnxruntime;
with --genai also OUT_DIR/genai, onnxruntime-genai's builder's fp32 CPU export (gpt-oss's
experts as onnxruntime's MoE op, which onnxruntime computes sparse); with --mxfp4 (gpt-oss)
its experts are rounded to MXFP4 and also saved as OpenAI ships them (OUT_DIR/hf-mxfp4), from
which the builder's int4 export (OUT_DIR/genai-int4) requantizes them to QMoE's 4-bit codes,
as it does gpt-oss-20b's. Nothing is downloaded;
run `bash scripts/setup.sh exporters` once for the venvs.

qwen3-moe is Qwen3-30B-A3B's shape in miniature: 8 layers of hidden 512, 8 query and 2 KV
heads of 64, and on every layer 32 experts of 256 features, 4 per token (norm_topk_prob):
400 MB of f32 weights, of which a token reads about an eighth of the experts'.

gpt-oss is gpt-oss-20b's in miniature, the same sizes: 32 experts of 256 features, 4 per
token, with biases and the clamped swiglu, attention sinks, a sliding window of 128 on every
other layer, YaRN (factor 32 over its 4096 original positions). optimum exports its experts
dense (every expert on every token), so onnxruntime computes all 32 of that file where llmc
computes the 4 chosen; the genai builder's MoE op has onnxruntime compute the 4 too.

deepseek-v3 is DeepSeek-V3's in miniature: multi-head latent attention (8 heads, q through a
rank-192 projection, k and v through a rank-128 latent, keys of 64 + 32 rotary features,
values of 64), a dense first layer, then on 7 layers 64 experts of 128 features and a shared
one, 8 per token chosen by sigmoid scores plus a drawn bias within the best 4 of 8 groups.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "exporters"))
from tiny_models import (TRAINED_BUFFERS, round_experts_to_mxfp4, save_mxfp4_experts,  # noqa: E402
                         train_tokenizer)

COMMON = dict(vocab_size=8192, hidden_size=512, num_hidden_layers=8, num_attention_heads=8,
              num_key_value_heads=2, head_dim=64, num_experts_per_tok=4,
              max_position_embeddings=4096, initializer_range=0.02, bos_token_id=1,
              eos_token_id=2, pad_token_id=0)
FAMILIES = {
    "qwen3-moe": ("Qwen3MoeConfig", dict(intermediate_size=1024, num_experts=32,
                                         moe_intermediate_size=256, norm_topk_prob=True)),
    "gpt-oss": ("GptOssConfig", dict(intermediate_size=256, num_local_experts=32,
                                     sliding_window=128,
                                     layer_types=["sliding_attention", "full_attention"] * 4,
                                     rope_scaling={"rope_type": "yarn", "factor": 32.0,
                                                   "beta_fast": 32.0, "beta_slow": 1.0,
                                                   "truncate": False,
                                                   "original_max_position_embeddings": 4096})),
    "deepseek-v3": ("DeepseekV3Config", dict(
        num_key_value_heads=8, head_dim=32, intermediate_size=1024, q_lora_rank=192,
        kv_lora_rank=128, qk_rope_head_dim=32, qk_nope_head_dim=64, v_head_dim=64,
        n_routed_experts=64, moe_intermediate_size=128, n_shared_experts=1,
        first_k_dense_replace=1, n_group=8, topk_group=4, num_experts_per_tok=8,
        routed_scaling_factor=2.5, norm_topk_prob=True, initializer_range=0.1)),
}


def deepseek_moe_every_expert(self, hidden_states, topk_indices, topk_weights):
    """transformers' DeepseekV3MoE.moe without its skip of the experts no token chose: traced
    as it is, optimum's export leaves out every expert its sample inputs did not reach (59-63
    of 64 per layer reached here), which llmc refuses. Each expert gathers its tokens with
    NonZero, so an expert without tokens adds nothing at run time."""
    final_hidden_states = torch.zeros_like(hidden_states, dtype=topk_weights.dtype)
    expert_mask = torch.nn.functional.one_hot(topk_indices, num_classes=len(self.experts))
    expert_mask = expert_mask.permute(2, 0, 1)
    for expert_idx, expert in enumerate(self.experts):
        token_indices, weight_indices = torch.where(expert_mask[expert_idx])
        weighted = expert(hidden_states[token_indices]) * topk_weights[
            token_indices, weight_indices].unsqueeze(-1)
        final_hidden_states.index_add_(0, token_indices, weighted)
    return final_hidden_states.type(hidden_states.dtype)


def export_every_expert(hf: Path, out: Path) -> None:
    """optimum's export of the DeepSeek-V3 model at `hf`, every expert in its graph."""
    from optimum.exporters.onnx import main_export
    from transformers.models.deepseek_v3 import modeling_deepseek_v3
    modeling_deepseek_v3.DeepseekV3MoE.moe = deepseek_moe_every_expert
    main_export(str(hf), output=str(out), task="text-generation-with-past")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--family", choices=sorted(FAMILIES), default="qwen3-moe")
    parser.add_argument("--genai", action="store_true",
                        help="also export with onnxruntime-genai's builder (fp32, CPU)")
    parser.add_argument("--mxfp4", action="store_true",
                        help="gpt-oss: MXFP4 experts, and the builder's int4 export of them")
    args = parser.parse_args()
    if args.mxfp4 and args.family != "gpt-oss":
        parser.error("--mxfp4 is gpt-oss's checkpoint format")
    hf = args.out / "hf"
    config_class, settings = FAMILIES[args.family]
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(
        getattr(transformers, config_class)(**{**COMMON, **settings}),
        dtype=torch.float32).eval()
    # transformers starts biases (and DeepSeek-V3's router bias, a buffer) at zero: draw them.
    trained = [buffer for name, buffer in model.named_buffers()
               if name.rsplit(".", 1)[-1] in TRAINED_BUFFERS]
    with torch.no_grad():
        for parameter in [*model.parameters(), *trained]:
            if not parameter.any():
                parameter.normal_(0.0, COMMON["initializer_range"])
    if args.mxfp4:
        round_experts_to_mxfp4(model)
    model.save_pretrained(hf)
    model.generation_config.save_pretrained(hf)
    train_tokenizer(hf, COMMON["vocab_size"])  # the genai builder saves one beside its export
    print(f"moe_model: wrote {hf}", file=sys.stderr, flush=True)
    if args.family == "deepseek-v3":
        export_every_expert(hf, args.out / "onnx")
    else:
        optimum_cli = Path(sys.executable).with_name("optimum-cli")
        subprocess.run([str(optimum_cli), "export", "onnx", "--model", str(hf), "--task",
                        "text-generation-with-past", str(args.out / "onnx")], check=True)
    print(f"moe_model: wrote {args.out / 'onnx'}", file=sys.stderr, flush=True)
    genai_python = Path(__file__).resolve().parents[1] / ".venv-genai" / "bin" / "python"

    def build_genai(source: Path, out: str, precision: str) -> None:
        subprocess.run([str(genai_python), "-m", "onnxruntime_genai.models.builder", "-i",
                        str(source), "-o", str(args.out / out), "-p", precision, "-e", "cpu",
                        "-c", str(args.out / "genai-cache")], check=True)
        print(f"moe_model: wrote {args.out / out}", file=sys.stderr, flush=True)

    if args.genai:
        build_genai(hf, "genai", "fp32")
    if args.mxfp4:
        checkpoint = args.out / "hf-mxfp4"
        model.save_pretrained(checkpoint)
        save_mxfp4_experts(checkpoint)
        for source in [hf / "generation_config.json", *hf.glob("tokenizer*.json"),
                       *hf.glob("special_tokens_map.json")]:
            shutil.copy(source, checkpoint)
        build_genai(checkpoint, "genai-int4", "int4")


if __name__ == "__main__":
    main()
