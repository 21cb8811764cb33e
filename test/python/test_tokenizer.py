"""The C++ tokenizer (runtime/tokenizer/, through llmc.tokenizer) against the Hugging Face
`tokenizers` package on the same tokenizer.json files.

The tokenizers: the default model's (models/smollm2-135m/tokenizer.json, built from the GGUF
file when absent) and tokenizers of each supported kind trained here on CORPUS with
`tokenizers` (no downloads): byte-level BPE with the pre-tokenizers of GPT-2, Llama-3, Qwen2
(NFC) and SmolLM2 and with Split in every behaviour, SentencePiece-style BPE with byte
fallback as Llama-2's (Prepend/Replace normalizers, ByteFallback/Fuse/Strip decoders), and
Metaspace tokenizers; with added tokens (special or not, lstrip, rstrip, single_word,
normalized) and BOS/EOS templates. Checked:

  * encode: the same ids for every text of CORPUS, with and without special tokens;
  * pairs (a cross-encoder's query and document): the same ids for pairs of CORPUS texts, by
    the pair templates, cut by truncation "longest_first" to lengths around theirs;
  * decode: the same text for those ids and for random id sequences (byte tokens, special
    tokens and unknown ids among them), skipping special tokens or not;
  * round trip: decode(encode(x)) == x where the reference gives x back;
  * fuzz: random valid UTF-8 gives the reference's ids, arbitrary bytes never crash (ill-formed
    UTF-8 is an LlmcRuntimeError);
  * streaming: the concatenated incremental output equals the full decode, and no piece ends
    inside a character;
  * load errors: what the runtime does not support is refused, naming it;
  * `llmc compile` copies the tokenizer into the artifact and `llmc run --prompt` prints text.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import unicodedata
import zlib
from pathlib import Path

import pytest
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                        pre_tokenizers, processors, trainers)

from llmc.runtime import LlmcRuntimeError
from llmc.tokenizer import Tokenizer as CppTokenizer

ROOT = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"
DEFAULT_TOKENIZER = ROOT / "models" / "smollm2-135m" / "tokenizer.json"

GPT2_PATTERN = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<|begin_of_text|>", "<|eot_id|>"]

# The multilingual corpus: every text is encoded by every tokenizer; the training text is
# made from it too.
CORPUS = [
    "The quick brown fox jumps over the lazy dog. It's 3:45pm; they've 12,345 items (~$67.89)!",
    "I'm sure you'll agree we'd better go: DON'T STOP, IT'S FINE, We'Re HERE.",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "int main(void) {\n\tprintf(\"%d\\n\", 42);\r\n\treturn 0;\n}\n",
    "    leading spaces, trailing spaces    ",
    "tabs\tand\t\tmore\t\t\ttabs\n\n\nnewlines\r\n\r\nwindows\r\rcarriage",
    "Digits: 0 1 12 123 1234 12345 3.14159 1e-10 0x1F 1,000,000 \u0661\u0662\u0663 \u096a\u096b "
    "\u00bd \u216b 2024-01-01",
    "\u4e2d\u6587\u5206\u8bcd\u6d4b\u8bd5\uff1a\u6211\u4eec\u4eca\u5929\u53bb\u5317\u4eac\u5927"
    "\u5b66\u770b\u770b\u3002\u673a\u5668\u5b66\u4e60\u548c\u81ea\u7136\u8bed\u8a00\u5904"
    "\u7406\u3002",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3001\u30ab\u30bf\u30ab\u30ca\u3068\u3072"
    "\u3089\u304c\u306a\u3002\u6771\u4eac\u30bf\u30ef\u30fc\u306f\u9ad8\u3044\uff01",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8\uc785\ub2c8\ub2e4. \uc548\ub155\ud558\uc138\uc694, "
    "\uc138\uacc4!",
    "Emoji: \U0001f600\U0001f603\U0001f604 \U0001f44d\U0001f3fd "
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 \U0001f3f3\ufe0f\u200d\U0001f308 "
    "\U0001f1eb\U0001f1f7\U0001f1ef\U0001f1f5 \u2764\ufe0f 1\ufe0f\u20e3 "
    "\U0001f9d1\U0001f3ff\u200d\U0001f4bb",
    "Combining: e\u0301 a\u0308 n\u0303 o\u0302\u0323 \u2014 Vi\u1ec7t Nam, Ti\u1ebfng Vi\u1ec7t; "
    "\u0939\u093f\u0928\u094d\u0926\u0940 \u0926\u0947\u0935\u0928\u093e\u0917\u0930\u0940; "
    "\ufb01 ligature; \u212b \u00c5 A\u030a; \u2460 \u00b2 \u2126",
    "RTL: \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u0646\u0635 \u062a\u062c\u0631\u064a\u0628"
    "\u064a\u060c \u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645. "
    "\u05e2\u05d1\u05e8\u05d9\u05ea: \u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd "
    "\u200f\u05e2\u05d5\u05b9\u05dc\u05b8\u05dd\u200e",
    "Mixed \u4e2d\u6587 English \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u65e5\u672c\u8a9e 123 "
    "\U0001f600 end.",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac: \u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1"
    "\u03b1 \u03ba\u03cc\u03c3\u03bc\u03b5! \u0420\u0443\u0441\u0441\u043a\u0438\u0439: "
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
    "Whitespace   runs\u00a0\u00a0nbsp\u2003em\u3000ideographic\u200bzwsp \u2028line\u2029para "
    "\u0085nel \u180emvs \u000bvt\u000cff",
    "URL https://example.com/path?q=1&x=y#frag and e-mail a.b@c.org; C:\\Windows\\path",
    "A zebra, a xylophone and a Quixotic zebras' xylophones",
    "<|begin_of_text|>special tokens<|eot_id|> inside <tool> text <mask> and more</s><s>",
    "a <mask> b<mask>c  <mask>  <rs>  after<rs>x xyz axyz xyzb (xyz) hello helloo <tool>",
    "<s><s>  </s>\n<unk><|eot_id|><|eot_id|>",
    "Control \x00 nul \x1b[31mred\x1b[0m \x7f del \u200d\u200c joiners \ufeff bom",
    "\u2581 lower one eighth block \u2581\u2581 and __init__ snake_case camelCase",
    "",
    " ",
    "  ",
    "a",
    "\n",
    "\t",
    "x" * 300,
    "\u4e2d" * 120 + " " + "\U0001f600" * 40,
    "word " * 200,
]

SP_SPECIALS = ["<unk>", "<s>", "</s>"]


def training_text() -> list[str]:
    words = " ".join(CORPUS).split()
    rng = random.Random(1)
    lines = list(CORPUS) * 3
    for _ in range(400):
        lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 20))))
    return lines


def extra_added_tokens(tokenizer: Tokenizer) -> None:
    """Added tokens with every flag, a token the model already has among them."""
    tokenizer.add_tokens([AddedToken("<tool>", normalized=True),
                          AddedToken("xyz", single_word=True, normalized=False),
                          AddedToken("hello", single_word=True)])
    tokenizer.add_special_tokens([AddedToken("<mask>", lstrip=True, normalized=False),
                                  AddedToken("<rs>", rstrip=True, normalized=False)])


def train_byte_level(vocab_size: int = 1500) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator(training_text(), trainer)
    tokenizer.decoder = decoders.ByteLevel()
    extra_added_tokens(tokenizer)
    return tokenizer


def train_sentencepiece() -> dict:
    """BPE on "▁"-marked words with a small alphabet, then Llama-2's layout: <unk> <s> </s>,
    the 256 <0xXX> byte tokens, the rest."""
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581",
                                                       prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(vocab_size=900, special_tokens=SP_SPECIALS, limit_alphabet=120,
                                  show_progress=False)
    tokenizer.train_from_iterator(training_text(), trainer)
    data = json.loads(tokenizer.to_str())
    vocab = {token: (i if i < len(SP_SPECIALS) else i + 256)
             for token, i in data["model"]["vocab"].items()}
    for byte in range(256):
        vocab[f"<0x{byte:02X}>"] = len(SP_SPECIALS) + byte
    data["model"]["vocab"] = vocab
    return data


def with_components(base: Tokenizer | dict, **components) -> Tokenizer:
    tokenizer = Tokenizer.from_str(base if isinstance(base, str) else
                                   json.dumps(base) if isinstance(base, dict) else base.to_str())
    for name, value in components.items():
        setattr(tokenizer, name, value)
    return tokenizer


def with_whole_words(base: Tokenizer, words: list[str]) -> dict:
    """The model with ignore_merges and byte-level tokens for whole words that its merges
    never build, so that only ignore_merges finds them."""
    data = json.loads(base.to_str())
    data["model"]["ignore_merges"] = True
    for i, word in enumerate(words):
        data["model"]["vocab"]["\u0120" + word] = 2000 + i
    return data


def template(single: str, specials: list[str], tokenizer: Tokenizer, pair: str | None = None):
    return processors.TemplateProcessing(
        single=single, pair=pair, special_tokens=[(s, tokenizer.token_to_id(s)) for s in specials])


def default_tokenizer() -> Tokenizer:
    if DEFAULT_TOKENIZER.exists():
        return Tokenizer.from_file(str(DEFAULT_TOKENIZER))
    from llmc.convert.gguf import build_tokenizer, default_gguf_path, open_gguf
    return build_tokenizer(open_gguf(default_gguf_path()))


def build_variants() -> dict[str, Tokenizer]:
    byte_level = train_byte_level()
    bl = pre_tokenizers.ByteLevel
    split_all_behaviours = pre_tokenizers.Sequence([
        pre_tokenizers.Split(" ", behavior="removed"),
        pre_tokenizers.Split(Regex(r"\d+"), behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex(r"[,.:;]"), behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"[aeiou]"), behavior="contiguous"),
        pre_tokenizers.Split(Regex(r"\p{Han}+|\s+"), behavior="isolated", invert=True),
        pre_tokenizers.Digits(individual_digits=False),
        bl(add_prefix_space=True, use_regex=False),
    ])
    variants = {
        "smollm2": default_tokenizer(),
        "gpt2": with_components(byte_level, pre_tokenizer=bl(add_prefix_space=True),
                                post_processor=processors.ByteLevel(trim_offsets=True)),
        "smollm2-style": with_components(
            byte_level, pre_tokenizer=pre_tokenizers.Sequence(
                [pre_tokenizers.Digits(individual_digits=True), bl(add_prefix_space=False)])),
        # Llama-3's BPE takes a word the vocabulary holds whole (ignore_merges).
        "llama3": with_components(
            with_whole_words(byte_level, ["zebra", "xylophone", "Quixotic"]),
            pre_tokenizer=pre_tokenizers.Sequence([
                pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated"),
                bl(add_prefix_space=False, use_regex=False)]),
            post_processor=processors.Sequence([
                processors.ByteLevel(trim_offsets=False),
                template("<|begin_of_text|> $A", ["<|begin_of_text|>"], byte_level,
                         pair="<|begin_of_text|> $A <|begin_of_text|>:1 $B:1")])),
        "qwen2-nfc": with_components(
            byte_level, normalizer=normalizers.NFC(),
            pre_tokenizer=pre_tokenizers.Sequence([
                pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
                bl(add_prefix_space=False, use_regex=False)])),
        "splits-nfkc": with_components(
            byte_level,
            normalizer=normalizers.Sequence([
                normalizers.NFKC(), normalizers.Replace(Regex(r"\s{2,}"), " "),
                normalizers.Prepend("\u00bb")]),
            pre_tokenizer=split_all_behaviours,
            post_processor=template("<s> $A </s>", ["<s>", "</s>"], byte_level,
                                    pair="<s> $A </s> </s>:1 $B:1 </s>:1"),
            decoder=decoders.Sequence([decoders.ByteLevel(), decoders.Replace("\u00bb", "<<"),
                                       decoders.Strip(content=" ", left=1, right=0)])),
        "nfd-roberta": with_components(
            byte_level, normalizer=normalizers.NFD(), pre_tokenizer=bl(add_prefix_space=True),
            post_processor=processors.RobertaProcessing(("</s>", byte_level.token_to_id("</s>")),
                                                        ("<s>", byte_level.token_to_id("<s>")))),
        "nfkd-bert": with_components(
            byte_level, normalizer=normalizers.NFKD(), pre_tokenizer=bl(add_prefix_space=False),
            post_processor=processors.BertProcessing(("</s>", byte_level.token_to_id("</s>")),
                                                     ("<s>", byte_level.token_to_id("<s>")))),
    }
    sentencepiece = train_sentencepiece()
    llama2 = with_components(
        sentencepiece,
        normalizer=normalizers.Sequence([normalizers.Prepend("\u2581"),
                                         normalizers.Replace(" ", "\u2581")]),
        pre_tokenizer=None,
        decoder=decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                   decoders.Fuse(), decoders.Strip(content=" ", left=1, right=0)]))
    llama2.post_processor = template("<s> $A", ["<s>"], llama2)
    extra_added_tokens(llama2)
    variants["llama2-bytefallback"] = llama2
    variants["metaspace-first"] = with_components(
        llama2, normalizer=None,
        pre_tokenizer=pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first",
                                               split=False),
        decoder=decoders.Sequence([decoders.ByteFallback(),
                                   decoders.Metaspace(replacement="\u2581", prepend_scheme="first"),
                                   decoders.Fuse()]))
    variants["metaspace-split"] = with_components(
        sentencepiece, normalizer=None,
        pre_tokenizer=pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always",
                                               split=True),
        decoder=decoders.Metaspace(replacement="\u2581", prepend_scheme="always"))
    variants["metaspace-never-unk"] = with_components(
        json.dumps({**json.loads(variants["metaspace-split"].to_str()),
                    "model": {**sentencepiece["model"], "byte_fallback": False,
                              "fuse_unk": False}}),
        pre_tokenizer=pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="never",
                                               split=True),
        decoder=decoders.Metaspace(replacement="\u2581", prepend_scheme="never"))
    return variants


VARIANTS = ["smollm2", "gpt2", "smollm2-style", "llama3", "qwen2-nfc", "splits-nfkc",
            "nfd-roberta", "nfkd-bert", "llama2-bytefallback", "metaspace-first",
            "metaspace-split", "metaspace-never-unk"]
# Decoding gives the text back exactly (the others normalize, strip or add spaces), but for
# the whitespace the added tokens with lstrip or rstrip take.
LOSSLESS = {"smollm2", "smollm2-style", "llama3"}


def lossless(name: str, text: str) -> bool:
    return name in LOSSLESS and "<mask>" not in text and "<rs>" not in text


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> dict[str, tuple[Tokenizer, CppTokenizer]]:
    directory = tmp_path_factory.mktemp("tokenizers")
    built = build_variants()
    assert sorted(built) == sorted(VARIANTS)
    result = {}
    for name, reference in built.items():
        path = directory / f"{name}.json"
        reference.save(str(path))
        # The reference as saved, so that both read the same file.
        result[name] = (Tokenizer.from_file(str(path)), CppTokenizer(path))
    return result


def reference_ids(reference: Tokenizer, text: str, add_special_tokens: bool) -> list[int]:
    return reference.encode(text, add_special_tokens=add_special_tokens).ids


@pytest.mark.parametrize("name", VARIANTS)
def test_encode_and_decode_corpus(pairs, name):
    reference, ours = pairs[name]
    for text in CORPUS:
        for add_special in (True, False):
            expected = reference_ids(reference, text, add_special)
            assert ours.encode(text, add_special) == expected, (name, text, add_special)
        for skip in (True, False):
            assert ours.decode(expected, skip) == reference.decode(expected, skip), (name, text)
        round_trip = ours.decode(ours.encode(text, False), False)
        assert round_trip == reference.decode(expected, False)
        if lossless(name, text):
            assert round_trip == text


@pytest.mark.parametrize("name", VARIANTS)
def test_encode_pairs_with_truncation(pairs, name):
    reference, ours = pairs[name]
    rng = random.Random(zlib.crc32(name.encode()))
    for _ in range(40):
        text, pair = rng.choice(CORPUS), rng.choice(CORPUS)
        for add_special in (True, False):
            expected = reference.encode(text, pair, add_special_tokens=add_special).ids
            assert ours.encode_pair(text, pair, add_special) == expected, (name, text, pair)
        full = len(expected)
        special = len(reference.encode("", "", add_special_tokens=True).ids)
        for max_length in {special, special + 1, full // 2 + special, full - 1, full + 3}:
            if max_length < special:
                continue
            reference.enable_truncation(max_length, strategy="longest_first")
            try:
                expected = reference.encode(text, pair).ids
            finally:
                reference.no_truncation()
            assert ours.encode_pair(text, pair, True, max_length) == expected, \
                (name, text, pair, max_length)
    if special > 0:
        with pytest.raises(LlmcRuntimeError, match="template alone adds"):
            ours.encode_pair("a", "b", True, special - 1)
    # One text is cut on the right as the reference's truncation does.
    for text in CORPUS[::7]:
        full = len(reference.encode(text).ids)
        for max_length in {full // 2 + 2, full - 1}:
            reference.enable_truncation(max_length)
            try:
                expected = reference.encode(text).ids
            finally:
                reference.no_truncation()
            assert ours.encode(text, True, max_length) == expected, (name, text, max_length)


def random_ids(rng: random.Random, ours: CppTokenizer, count: int) -> list[int]:
    """Ids from the whole vocabulary, the low ids (special and byte tokens) more often, and
    now and then one the vocabulary lacks."""
    limit = ours.id_limit
    ids = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.3:
            ids.append(rng.randrange(min(limit, 270)))
        elif roll < 0.32:
            ids.append(limit + rng.randrange(5))
        else:
            ids.append(rng.randrange(limit))
    return ids


@pytest.mark.parametrize("name", VARIANTS)
def test_decode_random_ids(pairs, name):
    reference, ours = pairs[name]
    rng = random.Random(7)
    for _ in range(200):
        ids = random_ids(rng, ours, rng.randint(0, 24))
        for skip in (True, False):
            assert ours.decode(ids, skip) == reference.decode(ids, skip), (name, ids, skip)


def stream_pieces(ours: CppTokenizer, ids: list[int], skip: bool) -> list[str]:
    stream = ours.decode_stream(skip)
    return [stream.step(i) for i in ids] + [stream.finish()]


@pytest.mark.parametrize("name", VARIANTS)
def test_streaming_equals_full_decode(pairs, name):
    reference, ours = pairs[name]
    rng = random.Random(11)
    texts = CORPUS + [random_text(rng, rng.randint(1, 40)) for _ in range(60)]
    sequences = [ours.encode(text) for text in texts]
    sequences += [random_ids(rng, ours, rng.randint(1, 30)) for _ in range(200)]
    for ids in sequences:
        for skip in (True, False):
            # Each piece is decoded from UTF-8 strictly on its way out of ctypes: a piece
            # that ended inside a character would raise there.
            pieces = stream_pieces(ours, ids, skip)
            assert "".join(pieces) == reference.decode(ids, skip), (name, ids)


def test_streaming_holds_back_incomplete_characters(pairs):
    reference, ours = pairs["smollm2"]
    ids = reference.encode("\U0001f600\u4e2d").ids  # byte-level tokens splitting the emoji
    assert len(ids) > 2
    pieces = stream_pieces(ours, ids, True)
    assert "".join(pieces) == "\U0001f600\u4e2d"
    assert all("\ufffd" not in piece for piece in pieces)
    _, llama2 = pairs["llama2-bytefallback"]
    byte = llama2.token_to_id
    euro = [byte("<0xE2>"), byte("<0x82>"), byte("<0xAC>")]
    # A run of byte tokens is held until a token that is not one: one more byte could make
    # the whole run ill-formed (one U+FFFD per byte).
    assert stream_pieces(llama2, euro + [byte("<0xFF>")], True) == ["", "", "", "", "\ufffd" * 4]
    pieces = stream_pieces(llama2, euro + [llama2.token_to_id("<s>"), byte("<0x41>")], False)
    assert "".join(pieces) == reference_decode(pairs, "llama2-bytefallback",
                                               euro + [llama2.token_to_id("<s>"), byte("<0x41>")])


def reference_decode(pairs, name: str, ids: list[int]) -> str:
    return pairs[name][0].decode(ids, skip_special_tokens=False)


# Characters for fuzzing: assigned in Unicode 14 (what PCRE2 10.42 and the reference's
# Oniguruma know) or, for tokenizers that normalize, in Unicode 3.2 (older than every
# normalization table involved), never surrogates.
def _assigned(database) -> list[int]:
    return [c for c in range(0x110000)
            if database.category(chr(c)) not in ("Cn", "Cs", "Co")]


ASSIGNED = _assigned(unicodedata)
ASSIGNED_OLD = _assigned(unicodedata.ucd_3_2_0)
NORMALIZING = {"qwen2-nfc", "splits-nfkc", "nfd-roberta", "nfkd-bert"}


def random_text(rng: random.Random, length: int, pool: list[int] | None = None) -> str:
    """Mostly ASCII and common scripts, spaces and digits, some of anything assigned."""
    pool = pool or ASSIGNED
    chars = []
    for _ in range(length):
        roll = rng.random()
        if roll < 0.35:
            chars.append(chr(rng.randrange(0x20, 0x7f)))
        elif roll < 0.45:
            chars.append(rng.choice(" \t\n\r  \u00a0\u3000"))
        elif roll < 0.6:
            chars.append(chr(rng.choice((0x4e00, 0x0600, 0x0900, 0x0400, 0x3040, 0xac00))
                             + rng.randrange(0x60)))
        elif roll < 0.65:
            chars.append(rng.choice(["<s>", "</s>", "<mask>", "<tool>", "<|eot_id|>", "xyz",
                                     "<0x41>", "\u2581", "\u0301", "\u200d"]))
        else:
            chars.append(chr(rng.choice(pool)))
    return "".join(chars)


@pytest.mark.parametrize("name", VARIANTS)
def test_fuzz_valid_utf8(pairs, name):
    reference, ours = pairs[name]
    rng = random.Random(zlib.crc32(name.encode()))
    pool = ASSIGNED_OLD if name in NORMALIZING else ASSIGNED
    for _ in range(int(os.environ.get("FUZZ_N", 150))):
        text = random_text(rng, rng.randint(0, 60), pool)
        expected = reference_ids(reference, text, True)
        assert ours.encode(text) == expected, (name, text)
        assert ours.decode(expected) == reference.decode(expected), (name, text)
        if lossless(name, text):
            assert ours.decode(ours.encode(text, False), False) == text


@pytest.mark.parametrize("name", ["smollm2", "llama2-bytefallback", "metaspace-first",
                                  "qwen2-nfc"])
def test_fuzz_arbitrary_bytes(pairs, name):
    reference, ours = pairs[name]
    rng = random.Random(3)
    for _ in range(300):
        data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            with pytest.raises(LlmcRuntimeError, match="not valid UTF-8"):
                ours.encode_bytes(data)
            continue
        assert ours.encode_bytes(data) == reference_ids(reference, text, True)


def test_unsupported_parts_are_load_errors(pairs, tmp_path):
    reference, _ = pairs["gpt2"]
    base = json.loads(reference.to_str())
    cases = {
        "normalizer type 'Lowercase' is not supported": {"normalizer": {"type": "Lowercase"}},
        "pre-tokenizer type 'Whitespace' is not supported": {
            "pre_tokenizer": {"type": "Whitespace"}},
        "decoder type 'WordPiece' is not supported": {
            "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True}},
        "model type 'WordPiece' is not supported": {
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0}}},
        "truncation is not supported": {
            "truncation": {"direction": "Right", "max_length": 8, "strategy": "LongestFirst",
                           "stride": 0}},
        "BPE dropout is not supported": {"model": {**base["model"], "dropout": 0.1}},
        "not in the vocabulary": {"model": {**base["model"], "merges": [["\u0120", "zzz"]]}},
    }
    for message, change in cases.items():
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({**base, **change}))
        with pytest.raises(LlmcRuntimeError, match=message):
            CppTokenizer(path)
    with pytest.raises(LlmcRuntimeError, match="cannot open"):
        CppTokenizer(tmp_path / "missing.json")


# --- `llmc compile` + `llmc run --prompt` ------------------------------------------------


def test_compile_copies_tokenizer_and_run_prints_text(tmp_path):
    from llmc.testing.fixtures import FIXTURES, fixture_name, write_fixture

    fixture = next(f for f in FIXTURES if fixture_name(*f) == "optimum-gqa")
    model = write_fixture(*fixture, tmp_path / "model")
    # A Llama-3-style tokenizer that fits the fixtures' 512 ids.
    small = train_byte_level(vocab_size=420)
    reference = with_components(
        small, pre_tokenizer=pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        post_processor=template("<|begin_of_text|> $A", ["<|begin_of_text|>"], small))
    reference.save(str(model.parent / "tokenizer.json"))
    assert CppTokenizer(model.parent / "tokenizer.json").id_limit <= 512
    (model.parent / "tokenizer_config.json").write_text(
        json.dumps({"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}))
    artifact = tmp_path / "model.llmc"
    subprocess.run([str(LLMC), "compile", str(model), "-o", str(artifact), "--quiet"],
                   check=True)
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert [f["file"] for f in manifest["tokenizer"]["files"]] == ["tokenizer.json",
                                                                   "tokenizer_config.json"]
    prompt = "The quick brown fox \u4e2d\u6587 \U0001f600"

    def run(*args):
        result = subprocess.run([str(LLMC), "run", str(artifact), *args, "--max-tokens", "12"],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout

    ids = json.loads(run("--prompt", prompt, "--json"))["outputs"][0]
    assert ids["prompt_ids"] == reference.encode(prompt).ids  # with <|begin_of_text|>
    assert run("--prompt", prompt) == reference.decode(ids["output_ids"]) + "\n"
    assert run("--prompt", prompt, "--print-ids") == " ".join(map(str, ids["output_ids"])) + "\n"
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text(prompt)
    assert run("--prompt-file", str(prompt_file), "--print-ids") == run("--prompt", prompt,
                                                                        "--print-ids")
    batch = tmp_path / "batch.jsonl"
    batch.write_text(json.dumps({"prompt": prompt}) + "\n" +
                     json.dumps({"prompt_ids": ids["prompt_ids"]}) + "\n")
    outputs = json.loads(run("--batch-file", str(batch), "--json"))["outputs"]
    assert outputs[0]["output_ids"] == outputs[1]["output_ids"] == ids["output_ids"]
    assert outputs[0]["text"] == reference.decode(ids["output_ids"])

    # A listed tokenizer file that went missing is a damaged artifact.
    (artifact / "tokenizer.json").rename(tmp_path / "moved.json")
    result = subprocess.run([str(LLMC), "run", str(artifact), "--prompt", "hi"],
                            capture_output=True, text=True)
    assert result.returncode == 1 and "tokenizer.json: cannot open" in result.stderr
    # An artifact compiled without a tokenizer takes ids only.
    del manifest["tokenizer"]
    (artifact / "manifest.json").write_text(json.dumps(manifest))
    result = subprocess.run([str(LLMC), "run", str(artifact), "--prompt", "hi"],
                            capture_output=True, text=True)
    assert result.returncode == 1 and "has no tokenizer.json" in result.stderr
    assert run("--prompt-ids", "1,2,3").count(" ") == 11
