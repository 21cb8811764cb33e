//===- TextBindings.cpp - tokenizer and chat templates for Python ---------===//
#include "runtime/chat/ChatTemplate.h"
#include "runtime/python/Bindings.h"
#include "runtime/python/PyJson.h"
#include "runtime/tokenizer/IncrementalDecoder.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

namespace nb = nanobind;
using llmc::runtime::chat::ChatTemplate;
using llmc::runtime::tokenizer::IncrementalDecoder;
using llmc::runtime::tokenizer::Tokenizer;

namespace llmc::python {
namespace {
/// Incremental detokenization; keeps its tokenizer alive.
struct DecodeStream {
  DecodeStream(std::shared_ptr<const Tokenizer> tokenizer, bool skipSpecialTokens)
      : tokenizer(std::move(tokenizer)), decoder(*this->tokenizer, skipSpecialTokens) {}
  std::shared_ptr<const Tokenizer> tokenizer;
  IncrementalDecoder decoder;
};
} // namespace

void bindText(nb::module_ &module) {
  nb::class_<Tokenizer>(module, "Tokenizer", "A Hugging Face tokenizer.json")
      .def_static(
          "from_file",
          [](const std::string &path) { return std::shared_ptr<Tokenizer>(Tokenizer::fromFile(path)); },
          nb::arg("path"), nb::call_guard<nb::gil_scoped_release>())
      .def(
          "encode",
          [](const Tokenizer &tokenizer, const std::string &text, bool addSpecialTokens,
             std::optional<size_t> maxLength) {
            return tokenizer.encode(text, addSpecialTokens, maxLength);
          },
          nb::arg("text"), nb::arg("add_special_tokens") = true,
          nb::arg("max_length") = nb::none(), nb::call_guard<nb::gil_scoped_release>())
      .def(
          "encode_pair",
          [](const Tokenizer &tokenizer, const std::string &text, const std::string &pair,
             bool addSpecialTokens, std::optional<size_t> maxLength) {
            return tokenizer.encodePair(text, pair, addSpecialTokens, maxLength);
          },
          nb::arg("text"), nb::arg("pair"), nb::arg("add_special_tokens") = true,
          nb::arg("max_length") = nb::none(), nb::call_guard<nb::gil_scoped_release>())
      .def(
          "encode_bytes",
          [](const Tokenizer &tokenizer, nb::bytes text, bool addSpecialTokens) {
            std::string_view view(text.c_str(), text.size());
            nb::gil_scoped_release release;
            return tokenizer.encode(view, addSpecialTokens);
          },
          nb::arg("text"), nb::arg("add_special_tokens") = true)
      .def(
          "decode",
          [](const Tokenizer &tokenizer, const std::vector<int32_t> &ids, bool skipSpecialTokens) {
            return tokenizer.decode(ids, skipSpecialTokens);
          },
          nb::arg("ids"), nb::arg("skip_special_tokens") = true,
          nb::call_guard<nb::gil_scoped_release>())
      .def("token_to_id", &Tokenizer::tokenToId, nb::arg("token"))
      .def("id_limit", &Tokenizer::idLimit);

  nb::class_<DecodeStream>(module, "DecodeStream",
                           "step(id) returns the text the id completed (often empty), finish() "
                           "the rest; together they make Tokenizer.decode(ids)")
      .def(nb::init<std::shared_ptr<const Tokenizer>, bool>(), nb::arg("tokenizer"),
           nb::arg("skip_special_tokens") = true)
      .def("step", [](DecodeStream &stream, int32_t id) { return stream.decoder.add(id); },
           nb::arg("id"))
      .def("finish", [](DecodeStream &stream) { return stream.decoder.finish(); });

  nb::class_<ChatTemplate>(module, "ChatTemplate",
                           "A parsed Hugging Face chat template (the Jinja2 subset they use)")
      .def_static("parse", &ChatTemplate::parse, nb::arg("source"))
      .def(
          "render",
          [](const ChatTemplate &chatTemplate, nb::dict context) {
            nlohmann::ordered_json variables = toJson<nlohmann::ordered_json>(context);
            nb::gil_scoped_release release;
            return chatTemplate.render(variables);
          },
          nb::arg("context"));
}

} // namespace llmc::python
