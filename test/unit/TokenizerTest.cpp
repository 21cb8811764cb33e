//===- TokenizerTest.cpp - the tokenizer's parts on small cases -----------===//
//
// UTF-8 handling, the Oniguruma-to-PCRE2 pattern rewriting, BPE merging,
// added tokens, templates, decoders, incremental decoding and load errors,
// on tokenizer.json documents written here. test/python/test_tokenizer.py
// compares whole tokenizers with the Hugging Face `tokenizers` package.
//
//===----------------------------------------------------------------------===//
#include "runtime/tokenizer/Tokenizer.h"
#include "llmc/Runtime/llmc_runtime.h"
#include "runtime/core/Error.h"
#include "runtime/tokenizer/IncrementalDecoder.h"
#include "runtime/tokenizer/Regex.h"
#include "runtime/tokenizer/TokenizerConfig.h"
#include "runtime/tokenizer/Utf8.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

using namespace llmc::runtime;
using namespace llmc::runtime::tokenizer;
using nlohmann::json;

namespace {

/// A BPE tokenizer.json: vocabulary, merges (highest priority first) and
/// whatever else `extra` sets at the top level.
std::unique_ptr<Tokenizer> makeTokenizer(const json &vocab, const json &merges,
                                         const json &extra = json::object(),
                                         const json &modelExtra = json::object()) {
  json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}};
  model.update(modelExtra);
  json document = {{"version", "1.0"}, {"model", model}};
  document.update(extra);
  return Tokenizer::fromJson(document.dump(), "test.json");
}

std::string loadError(const json &document) {
  try {
    Tokenizer::fromJson(document.dump(), "tokenizer.json");
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

json byteLevelVocabulary() {
  // GPT-2's alphabet: printable bytes stand for themselves, the rest for U+0100 on.
  json vocab = json::object();
  int next = 0x100, id = 0;
  for (int byte = 0; byte < 256; ++byte) {
    bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
    std::string character;
    appendUtf8(character, printable ? byte : next++);
    vocab[character] = id++;
  }
  return vocab;
}

std::string streamed(const Tokenizer &tokenizer, const std::vector<int32_t> &ids,
                     std::vector<std::string> *pieces = nullptr, bool skipSpecial = true) {
  IncrementalDecoder decoder(tokenizer, skipSpecial);
  std::string text;
  for (int32_t id : ids) {
    std::string piece = decoder.add(id);
    if (pieces) pieces->push_back(piece);
    text += piece;
  }
  std::string rest = decoder.finish();
  if (pieces) pieces->push_back(rest);
  return text + rest;
}

} // namespace

TEST(TokenizerUtf8, WellFormedSequencesFollowTheStandardTable) {
  EXPECT_TRUE(isValidUtf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
  EXPECT_EQ(findInvalidUtf8("ab\xC0\xAF"), 2u);        // overlong
  EXPECT_EQ(findInvalidUtf8("\xED\xA0\x80"), 0u);      // a surrogate
  EXPECT_EQ(findInvalidUtf8("x\xF4\x90\x80\x80"), 1u); // past U+10FFFF
  EXPECT_EQ(findInvalidUtf8("\xE0\x80\x80"), 0u);      // overlong three bytes
  EXPECT_EQ(findInvalidUtf8("ok\xE2\x82"), 2u);        // cut off
  size_t offset = 0;
  EXPECT_EQ(decodeUtf8("\xF0\x9F\x98\x80", offset), U'\U0001F600');
  EXPECT_EQ(offset, 4u);
}

TEST(TokenizerUtf8, LossyDecodingReplacesMaximalSubparts) {
  auto lossy = [](std::string_view bytes) {
    std::string out;
    appendLossyUtf8(out, bytes);
    return out;
  };
  const std::string fffd(kReplacementCharacter);
  EXPECT_EQ(lossy("a\xF0\x9F\x98"), "a" + fffd); // one maximal subpart
  EXPECT_EQ(lossy("\xE2\x28\xA1"), fffd + "(" + fffd);
  EXPECT_EQ(lossy("\xED\xA0\x80"), fffd + fffd + fffd); // ED A0 is no prefix
  EXPECT_EQ(lossy("\xFF\xC3\xA9"), fffd + "\xC3\xA9");
  EXPECT_TRUE(endsWithTruncatedUtf8("a\xF0\x9F\x98"));
  EXPECT_TRUE(endsWithTruncatedUtf8("\xE2"));
  EXPECT_FALSE(endsWithTruncatedUtf8("a\xE2\x82\xAC"));
  EXPECT_FALSE(endsWithTruncatedUtf8("\xE2\x28")); // resolved by the '('
  EXPECT_FALSE(endsWithTruncatedUtf8("\xED\xA0")); // can never complete
}

TEST(TokenizerRegex, OnigurumaEscapesAreRewrittenForPcre2) {
  std::string translated = translateOnigurumaPattern(R"(\s+(?!\S)|[^\s\p{L}]|\p{Han}+|\w)");
  EXPECT_NE(translated.find(R"([\t-\r \x{85})"), std::string::npos) << translated;
  EXPECT_NE(translated.find(R"(\p{sc:Han})"), std::string::npos) << translated;
  EXPECT_NE(translated.find(R"([^\t-\r \x{85}\x{A0})"), std::string::npos) << translated;
  EXPECT_NE(translated.find(R"(\p{L})"), std::string::npos) << translated;
  EXPECT_THROW(translateOnigurumaPattern("[a[bc]]"), Error);
  EXPECT_THROW(translateOnigurumaPattern("[a-z&&[^aeiou]]"), Error);
  EXPECT_THROW(Regex::pattern("(unclosed"), Error);

  auto matches = [](const Regex &regex, std::string_view text) {
    std::vector<Match> found;
    regex.findAll(text, found);
    std::string listed;
    for (const Match &match : found)
      listed += "[" + std::to_string(match.begin) + "," + std::to_string(match.end) + ")";
    return listed;
  };
  // U+180E is no White_Space to Oniguruma (nor here); U+0085 is.
  EXPECT_EQ(matches(Regex::pattern(R"(\s)"), "\xE1\xA0\x8E\xC2\x85"), "[3,5)");
  // U+3002 is of script Common, though its Script_Extensions list Han.
  EXPECT_EQ(matches(Regex::pattern(R"(\p{Han}+)"), "\xE4\xB8\xAD\xE3\x80\x82"), "[0,3)");
  // No empty match right where the previous match ended.
  EXPECT_EQ(matches(Regex::pattern("x*"), "xab"), "[0,1)[2,2)[3,3)");
  EXPECT_EQ(matches(Regex::literal("a.b"), "a.bacb"), "[0,3)");
}

TEST(TokenizerBpe, MergesLowestRankFirstLeftmostOnTies) {
  json vocab = {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}, {"aa", 6}};
  // "b c" outranks "a b": "abc" becomes a + bc, and a + bc is no merge.
  auto tokenizer = makeTokenizer(vocab, json::array({"b c", "a b", "a a"}));
  EXPECT_EQ(tokenizer->encode("abc"), (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(tokenizer->encode("aaa"), (std::vector<int32_t>{6, 0})); // leftmost pair first
  auto merged =
      makeTokenizer(vocab, json::array({json::array({"a", "b"}), json::array({"ab", "c"})}));
  EXPECT_EQ(merged->encode("abc"), (std::vector<int32_t>{5}));
  EXPECT_EQ(merged->decode({5, 0}), "abc a"); // no decoder: tokens joined by spaces
}

TEST(TokenizerBpe, ByteFallbackUnknownTokensAndIgnoreMerges) {
  json vocab = {{"<unk>", 0}, {"a", 1}, {"b", 2}, {"ab", 3}, {"<0xC3>", 4}, {"<0xA9>", 5}};
  json bpe = {{"unk_token", "<unk>"}, {"byte_fallback", true}};
  auto tokenizer = makeTokenizer(vocab, json::array({"a b"}), json::object(), bpe);
  // é has both byte tokens; € has none and becomes the unknown token.
  EXPECT_EQ(tokenizer->encode("ab\xC3\xA9"), (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(tokenizer->encode("\xE2\x82\xAC\xE2\x82\xAC"
                              "a"),
            (std::vector<int32_t>{0, 0, 1}));
  bpe["fuse_unk"] = true;
  auto fused = makeTokenizer(vocab, json::array({"a b"}), json::object(), bpe);
  EXPECT_EQ(fused->encode("\xE2\x82\xAC\xE2\x82\xAC"
                          "a"),
            (std::vector<int32_t>{0, 1}));
  // Without an unknown token the character is dropped, as the reference does,
  // and its neighbours may then merge.
  auto noUnknown = makeTokenizer(vocab, json::array({"a b"}));
  EXPECT_EQ(noUnknown->encode("a?b"), (std::vector<int32_t>{3}));
  json whole = {{"a", 0}, {"b", 1}, {"abab", 2}, {"ab", 3}};
  auto ignoring =
      makeTokenizer(whole, json::array({"a b"}), json::object(), {{"ignore_merges", true}});
  EXPECT_EQ(ignoring->encode("abab"), (std::vector<int32_t>{2}));
}

TEST(TokenizerBpe, ContinuingSubwordPrefixAndEndOfWordSuffix) {
  json vocab = {{"a", 0}, {"##b", 1}, {"##c</w>", 2}, {"ab", 3}, {"abc</w>", 4}, {"##c", 5}};
  auto tokenizer =
      makeTokenizer(vocab, json::array({"a ##b", "ab ##c</w>"}), json::object(),
                    {{"continuing_subword_prefix", "##"}, {"end_of_word_suffix", "</w>"}});
  EXPECT_EQ(tokenizer->encode("abc"), (std::vector<int32_t>{4}));
}

TEST(TokenizerAddedTokens, MatchedBeforeSplittingWithStripAndSingleWord) {
  json vocab = byteLevelVocabulary();
  json extra = {{"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
                {"decoder", {{"type", "ByteLevel"}}},
                {"added_tokens",
                 {{{"id", 256}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
                  {{"id", 257},
                   {"content", "<mask>"},
                   {"special", true},
                   {"lstrip", true},
                   {"normalized", false}},
                  {{"id", 258}, {"content", "xy"}, {"single_word", true}, {"normalized", false}},
                  {{"id", 259}, {"content", "<r>"}, {"rstrip", true}, {"normalized", false}}}}};
  auto tokenizer = makeTokenizer(vocab, json::array(), extra);
  EXPECT_EQ(tokenizer->encode("<s>a"), (std::vector<int32_t>{256, 'a'}));
  EXPECT_EQ(tokenizer->encode("a  <mask>"), (std::vector<int32_t>{'a', 257}));
  EXPECT_EQ(tokenizer->encode("<r>  b"), (std::vector<int32_t>{259, 'b'}));
  EXPECT_EQ(tokenizer->encode("xy"), (std::vector<int32_t>{258}));
  EXPECT_EQ(tokenizer->encode("axy").size(), 3u); // inside a word: not the token
  EXPECT_EQ(tokenizer->decode({256, 'a'}), "a");
  EXPECT_EQ(tokenizer->decode({256, 'a'}, /*skipSpecialTokens=*/false), "<s>a");
  EXPECT_EQ(tokenizer->tokenToId("<mask>"), 257);
  EXPECT_EQ(tokenizer->idLimit(), 260);
}

TEST(TokenizerPostProcessor, TemplateAddsSpecialTokensOnRequest) {
  json vocab = {{"<s>", 0}, {"</s>", 1}, {"a", 2}};
  json extra = {{"post_processor",
                 {{"type", "TemplateProcessing"},
                  {"single",
                   {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                    {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                    {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}}},
                  {"pair", json::array()},
                  {"special_tokens",
                   {{"<s>", {{"id", "<s>"}, {"ids", {0}}, {"tokens", {"<s>"}}}},
                    {"</s>", {{"id", "</s>"}, {"ids", {1}}, {"tokens", {"</s>"}}}}}}}}};
  auto tokenizer = makeTokenizer(vocab, json::array(), extra);
  EXPECT_EQ(tokenizer->encode("aa"), (std::vector<int32_t>{0, 2, 2, 1}));
  EXPECT_EQ(tokenizer->encode("aa", /*addSpecialTokens=*/false), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(tokenizer->encode(""), (std::vector<int32_t>{0, 1}));
}

TEST(TokenizerPostProcessor, PairTemplatesJoinBothSequences) {
  json vocab = {{"<s>", 0}, {"</s>", 1}, {"a", 2}, {"b", 3}};
  auto special = [](const char *name) {
    return json{{"SpecialToken", {{"id", name}, {"type_id", 0}}}};
  };
  auto sequence = [](const char *name) {
    return json{{"Sequence", {{"id", name}, {"type_id", 0}}}};
  };
  // Llama-3's form: BOS before each sequence, inside a Sequence after ByteLevel.
  json llama3 = {
      {"type", "Sequence"},
      {"processors",
       {{{"type", "ByteLevel"}, {"trim_offsets", false}},
        {{"type", "TemplateProcessing"},
         {"single", {special("<s>"), sequence("A")}},
         {"pair", {special("<s>"), sequence("A"), special("<s>"), sequence("B")}},
         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {0}}, {"tokens", {"<s>"}}}}}}}}}};
  auto tokenizer = makeTokenizer(vocab, json::array(), {{"post_processor", llama3}});
  EXPECT_EQ(tokenizer->encodePair("aa", "b"), (std::vector<int32_t>{0, 2, 2, 0, 3}));
  EXPECT_EQ(tokenizer->encodePair("aa", "b", /*addSpecialTokens=*/false),
            (std::vector<int32_t>{2, 2, 3}));
  EXPECT_EQ(tokenizer->encode("aa"), (std::vector<int32_t>{0, 2, 2}));

  json roberta = {{"type", "RobertaProcessing"}, {"sep", {"</s>", 1}}, {"cls", {"<s>", 0}}};
  tokenizer = makeTokenizer(vocab, json::array(), {{"post_processor", roberta}});
  EXPECT_EQ(tokenizer->encodePair("a", "b"), (std::vector<int32_t>{0, 2, 1, 1, 3, 1}));
  json bert = {{"type", "BertProcessing"}, {"sep", {"</s>", 1}}, {"cls", {"<s>", 0}}};
  tokenizer = makeTokenizer(vocab, json::array(), {{"post_processor", bert}});
  EXPECT_EQ(tokenizer->encodePair("a", "b"), (std::vector<int32_t>{0, 2, 1, 3, 1}));
  // Without a post-processor (Qwen2's) the pair is the two concatenated.
  tokenizer = makeTokenizer(vocab, json::array());
  EXPECT_EQ(tokenizer->encodePair("ab", "ba"), (std::vector<int32_t>{2, 3, 3, 2}));
}

TEST(TokenizerPostProcessor, PairTruncationCutsTheLongerFirst) {
  // The reference's own cases (tokenizers' truncate_encodings_longest_first):
  // lengths 0, 2, 4 and 8 cut to 7 ids in all.
  const size_t lengths[] = {0, 2, 4, 8};
  const size_t expected[4][4][2] = {
      {{0, 0}, {0, 2}, {0, 4}, {0, 7}},
      {{2, 0}, {2, 2}, {2, 4}, {2, 5}},
      {{4, 0}, {4, 2}, {3, 4}, {3, 4}},
      {{7, 0}, {5, 2}, {4, 3}, {3, 4}},
  };
  for (size_t i = 0; i < 4; ++i) {
    for (size_t j = 0; j < 4; ++j) {
      std::vector<int32_t> first(lengths[i], 1), second(lengths[j], 2);
      truncateLongestFirst(first, second, 7);
      EXPECT_EQ(first.size(), expected[i][j][0]) << lengths[i] << " " << lengths[j];
      EXPECT_EQ(second.size(), expected[i][j][1]) << lengths[i] << " " << lengths[j];
    }
  }
  std::vector<int32_t> first = {1, 2, 3, 4}, second = {5, 6, 7, 8};
  truncateLongestFirst(first, second, 0);
  EXPECT_TRUE(first.empty() && second.empty());

  // The template's own tokens count against the length, and cannot be cut.
  json vocab = {{"<s>", 0}, {"</s>", 1}, {"a", 2}, {"b", 3}};
  json bert = {{"type", "BertProcessing"}, {"sep", {"</s>", 1}}, {"cls", {"<s>", 0}}};
  auto tokenizer = makeTokenizer(vocab, json::array(), {{"post_processor", bert}});
  EXPECT_EQ(tokenizer->encodePair("aaaa", "bb", true, 7), (std::vector<int32_t>{0, 2, 2, 1, 3, 3, 1}));
  EXPECT_EQ(tokenizer->encodePair("aaaa", "bb", false, 3), (std::vector<int32_t>{2, 2, 3}));
  EXPECT_THROW(tokenizer->encodePair("a", "b", true, 2), Error);
  // One text is cut on the right to leave room for cls and sep.
  EXPECT_EQ(tokenizer->encode("aaaa", true, 4), (std::vector<int32_t>{0, 2, 2, 1}));
  EXPECT_EQ(tokenizer->encode("aaaa", false, 3), (std::vector<int32_t>{2, 2, 2}));
  EXPECT_THROW(tokenizer->encode("a", true, 1), Error);
}

TEST(TokenizerDecoder, SentencePieceChainAndMetaspace) {
  json vocab = {{"<s>", 0},
                {"\xE2\x96\x81"
                 "a",
                 1},
                {"b", 2},
                {"<0xE2>", 3},
                {"<0x82>", 4},
                {"<0xAC>", 5},
                {"\xE2\x96\x81", 6},
                {"a", 7}};
  json merges = json::array({"\xE2\x96\x81 a"});
  json llama = {
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}}};
  auto tokenizer = makeTokenizer(vocab, merges, llama, {{"byte_fallback", true}});
  EXPECT_EQ(tokenizer->encode("a\xE2\x82\xAC"), (std::vector<int32_t>{1, 3, 4, 5}));
  EXPECT_EQ(tokenizer->decode({1, 3, 4, 5, 1}), "a\xE2\x82\xAC a");
  EXPECT_EQ(tokenizer->decode({3, 4}), "\xEF\xBF\xBD\xEF\xBF\xBD"); // one U+FFFD per byte

  json metaspace = {
      {"pre_tokenizer",
       {{"type", "Metaspace"},
        {"replacement", "\xE2\x96\x81"},
        {"prepend_scheme", "first"},
        {"split", true}}},
      {"decoder",
       {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}}}};
  auto marked = makeTokenizer(vocab, merges, metaspace);
  EXPECT_EQ(marked->encode("a b"), (std::vector<int32_t>{1, 6, 2}));
  EXPECT_EQ(marked->decode({1, 6, 2}), "a b");
  EXPECT_EQ(marked->decode({6, 1}), " a"); // only the first token's markers are dropped
}

TEST(TokenizerIncremental, TextIsReleasedOnlyWhenFinal) {
  json extra = {{"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
                {"decoder", {{"type", "ByteLevel"}}}};
  auto tokenizer = makeTokenizer(byteLevelVocabulary(), json::array(), extra);
  std::vector<int32_t> ids = tokenizer->encode("a\xF0\x9F\x98\x80"
                                               "b"); // the emoji is 4 tokens
  ASSERT_EQ(ids.size(), 6u);
  std::vector<std::string> pieces;
  EXPECT_EQ(streamed(*tokenizer, ids, &pieces), "a\xF0\x9F\x98\x80"
                                                "b");
  EXPECT_EQ(pieces, (std::vector<std::string>{"a", "", "", "", "\xF0\x9F\x98\x80", "b", ""}));
  // A stream that ends inside a character releases its replacement at the end.
  std::vector<int32_t> cut(ids.begin(), ids.begin() + 3);
  EXPECT_EQ(streamed(*tokenizer, cut), tokenizer->decode(cut));

  // Random ids: the stream always concatenates to the full decode.
  std::mt19937 random(5);
  for (int round = 0; round < 200; ++round) {
    std::vector<int32_t> sequence(random() % 12);
    for (int32_t &id : sequence) id = static_cast<int32_t>(random() % 256);
    EXPECT_EQ(streamed(*tokenizer, sequence), tokenizer->decode(sequence));
  }
}

TEST(TokenizerIncremental, ByteFallbackRunsAndStrippedStartsStayExact) {
  json vocab = {{"<s>", 0},
                {"\xE2\x96\x81"
                 "a",
                 1},
                {"<0xE2>", 2},
                {"<0x82>", 3},
                {"<0xAC>", 4},
                {"<0xFF>", 5},
                {"\xE2\x96\x81", 6}};
  json decoder = {
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"added_tokens", {{{"id", 0}, {"content", "<s>"}, {"special", true}}}}};
  auto tokenizer = makeTokenizer(vocab, json::array(), decoder);
  std::vector<std::string> pieces;
  // The euro's bytes are held until a token that is not a byte: a fourth byte
  // (0xFF) would have made all four U+FFFD.
  EXPECT_EQ(streamed(*tokenizer, {2, 3, 4, 1}, &pieces), "\xE2\x82\xAC a");
  EXPECT_EQ(pieces, (std::vector<std::string>{"", "", "", "\xE2\x82\xAC a", ""}));
  EXPECT_EQ(streamed(*tokenizer, {2, 3, 4, 5}), tokenizer->decode({2, 3, 4, 5}));
  // A leading special token, skipped, does not use up the stripped space.
  for (bool skip : {true, false}) {
    std::vector<int32_t> ids = {0, 6, 1, 6, 6, 1};
    EXPECT_EQ(streamed(*tokenizer, ids, nullptr, skip), tokenizer->decode(ids, skip));
  }
  std::mt19937 random(9);
  for (int round = 0; round < 300; ++round) {
    std::vector<int32_t> sequence(random() % 10);
    for (int32_t &id : sequence) id = static_cast<int32_t>(random() % 8); // 7: unknown id
    EXPECT_EQ(streamed(*tokenizer, sequence), tokenizer->decode(sequence));
  }
}

TEST(TokenizerLoad, UnsupportedPartsAreClearErrors) {
  json model = {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", json::array()}};
  json base = {{"version", "1.0"}, {"model", model}};
  auto with = [&](const char *key, json value) {
    json document = base;
    document[key] = std::move(value);
    return loadError(document);
  };
  EXPECT_EQ(with("normalizer", {{"type", "Lowercase"}}),
            "tokenizer.json: normalizer: normalizer type 'Lowercase' is not supported (supported: "
            "NFC, NFD, NFKC, NFKD, Prepend, Replace, Sequence)");
  EXPECT_NE(
      with("pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Whitespace"}}}}})
          .find("pre_tokenizer.pretokenizers[0]: pre-tokenizer type 'Whitespace' is not supported"),
      std::string::npos);
  EXPECT_NE(with("decoder", {{"type", "WordPiece"}}).find("decoder type 'WordPiece'"),
            std::string::npos);
  EXPECT_NE(with("post_processor", {{"type", "Bogus"}}).find("post-processor type 'Bogus'"),
            std::string::npos);
  EXPECT_NE(with("truncation", {{"max_length", 4}}).find("truncation is not supported"),
            std::string::npos);
  EXPECT_NE(with("padding", {{"strategy", {{"Fixed", 8}}}}).find("padding"), std::string::npos);
  EXPECT_EQ(with("padding", {{"strategy", "BatchLongest"}}), "");
  EXPECT_NE(with("version", "2.0").find("unknown tokenizer version"), std::string::npos);
  EXPECT_NE(
      with("model", {{"type", "Unigram"}, {"vocab", json::array()}}).find("model type 'Unigram'"),
      std::string::npos);
  json dropout = model;
  dropout["dropout"] = 0.1;
  EXPECT_NE(with("model", dropout).find("dropout is not supported"), std::string::npos);
  json badMerge = model;
  badMerge["merges"] = {"a b"};
  EXPECT_EQ(with("model", badMerge),
            "tokenizer.json: model.merges[0]: merge of 'a' and 'b': 'b' is not in the vocabulary");
  EXPECT_NE(with("pre_tokenizer",
                 {{"type", "Split"}, {"pattern", {{"Regex", "(x"}}}, {"behavior", "Isolated"}})
                .find("pre_tokenizer.pattern.Regex: regex '(x' does not compile"),
            std::string::npos);
  EXPECT_NE(with("pre_tokenizer",
                 {{"type", "Split"}, {"pattern", {{"String", "x"}}}, {"behavior", "Sideways"}})
                .find("unknown split behavior 'Sideways'"),
            std::string::npos);
  EXPECT_THROW(Tokenizer::fromJson("{not json", "bad.json"), Error);
  EXPECT_THROW(Tokenizer::fromFile("/nonexistent/tokenizer.json"), Error);
}

TEST(TokenizerLoad, IllFormedTextIsAnErrorNotACrash) {
  auto tokenizer = makeTokenizer({{"a", 0}}, json::array());
  EXPECT_THROW(tokenizer->encode("a\xFF"), Error);
  std::mt19937 random(3);
  for (int round = 0; round < 500; ++round) {
    std::string bytes(random() % 16, '\0');
    for (char &byte : bytes) byte = static_cast<char>(random());
    if (isValidUtf8(bytes)) {
      EXPECT_NO_THROW(tokenizer->encode(bytes));
    } else {
      EXPECT_THROW(tokenizer->encode(bytes), Error);
    }
  }
}

TEST(TokenizerConfig, ReadsSpecialTokensAsStringsOrObjects) {
  std::string path = ::testing::TempDir() + "tokenizer_config.json";
  std::ofstream(path)
      << R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>"})";
  TokenizerConfig config = TokenizerConfig::load(path);
  EXPECT_EQ(config.bosToken, "<s>");
  EXPECT_EQ(config.eosToken, "</s>");
  std::remove(path.c_str());
  EXPECT_THROW(TokenizerConfig::load(path), Error);
}

TEST(TokenizerConfig, ReadsEosIdsFromGenerationConfigBeside) {
  std::string directory = ::testing::TempDir() + "generation_config_test/";
  std::filesystem::create_directories(directory);
  std::string path = directory + "tokenizer_config.json";
  std::string generation = directory + "generation_config.json";
  std::ofstream(path) << R"({"eos_token": "</s>"})";
  EXPECT_TRUE(TokenizerConfig::load(path).eosTokenIds.empty());

  // Llama-3 names several ids; each ends generation, once.
  std::ofstream(generation) << R"({"bos_token_id": 1, "eos_token_id": [128001, 128008, 128001]})";
  TokenizerConfig config = TokenizerConfig::load(path);
  EXPECT_EQ(config.eosTokenIds, (std::vector<int32_t>{128001, 128008, 128001}));
  EXPECT_EQ(endOfSequenceIds(config, nullptr, 128256), (std::vector<int32_t>{128001, 128008}));
  EXPECT_THROW(endOfSequenceIds(config, nullptr, 128002), Error);

  std::ofstream(generation) << R"({"eos_token_id": 2})";
  EXPECT_EQ(TokenizerConfig::load(path).eosTokenIds, (std::vector<int32_t>{2}));

  // Bad input: one clear error.
  std::ofstream(generation) << R"({"eos_token_id": "</s>"})";
  EXPECT_THROW(TokenizerConfig::load(path), Error);
  std::ofstream(generation) << R"({"eos_token_id": [-1]})";
  EXPECT_THROW(TokenizerConfig::load(path), Error);
  std::ofstream(generation) << "not json";
  EXPECT_THROW(TokenizerConfig::load(path), Error);
  std::filesystem::remove_all(directory);
}

TEST(TokenizerCApi, EncodeDecodeAndStreamThroughTheCInterface) {
  char err[256] = "";
  EXPECT_EQ(llmc_tokenizer_load("/nonexistent/tokenizer.json", err, sizeof(err)), nullptr);
  EXPECT_NE(std::string(err).find("cannot open the tokenizer"), std::string::npos);

  json document = {
      {"version", "1.0"},
      {"model", {{"type", "BPE"}, {"vocab", byteLevelVocabulary()}, {"merges", json::array()}}},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
      {"decoder", {{"type", "ByteLevel"}}}};
  std::string path = ::testing::TempDir() + "capi-tokenizer.json";
  std::ofstream(path) << document.dump();
  LlmcTokenizer *tokenizer = llmc_tokenizer_load(path.c_str(), err, sizeof(err));
  ASSERT_NE(tokenizer, nullptr) << err;
  EXPECT_EQ(llmc_tokenizer_id_limit(tokenizer), 256);
  EXPECT_EQ(llmc_tokenizer_token_to_id(tokenizer, "a"), 'a');
  EXPECT_EQ(llmc_tokenizer_token_to_id(tokenizer, "no such token"), -1);

  // Too small a buffer: the count comes back and nothing is written.
  const std::string text = "h\xC3\xA9";
  int32_t ids[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  EXPECT_EQ(llmc_tokenizer_encode(tokenizer, text.data(), text.size(), 1, ids, 2, err, sizeof(err)),
            3);
  EXPECT_EQ(ids[0], -1);
  ASSERT_EQ(llmc_tokenizer_encode(tokenizer, text.data(), text.size(), 1, ids, 8, err, sizeof(err)),
            3);
  EXPECT_EQ(llmc_tokenizer_encode(tokenizer, "\xFF", 1, 1, ids, 8, err, sizeof(err)), -1);
  EXPECT_NE(std::string(err).find("not valid UTF-8"), std::string::npos);

  char decoded[8];
  EXPECT_EQ(llmc_tokenizer_decode(tokenizer, ids, 3, 1, decoded, 1, err, sizeof(err)), 3);
  ASSERT_EQ(llmc_tokenizer_decode(tokenizer, ids, 3, 1, decoded, sizeof(decoded), err, sizeof(err)),
            3);
  EXPECT_EQ(std::string(decoded, 3), text);

  LlmcDecodeStream *stream = llmc_decode_stream_new(tokenizer, 1);
  ASSERT_NE(stream, nullptr);
  std::string streamedText;
  const char *piece = nullptr;
  size_t length = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(llmc_decode_stream_step(stream, ids[i], &piece, &length, err, sizeof(err)), 0);
    // "é" is two tokens: nothing comes out after the first.
    if (i == 1) {
      EXPECT_EQ(length, 0u);
    }
    streamedText.append(piece, length);
  }
  ASSERT_EQ(llmc_decode_stream_finish(stream, &piece, &length, err, sizeof(err)), 0);
  streamedText.append(piece, length);
  EXPECT_EQ(streamedText, text);
  llmc_decode_stream_free(stream);
  llmc_tokenizer_free(tokenizer);
  std::remove(path.c_str());
}
