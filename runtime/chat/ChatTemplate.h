//===- ChatTemplate.h - Hugging Face chat templates -------------*- C++ -*-===//
//
// A model's chat template (tokenizer_config.json's `chat_template`) turns the
// messages of a chat request into the prompt text. It is a Jinja2 template,
// and this class runs the subset of Jinja2 that the chat templates of the
// common model families use, with the output of transformers'
// apply_chat_template: jinja2's ImmutableSandboxedEnvironment with
// trim_blocks and lstrip_blocks, the loop controls, `raise_exception`,
// `strftime_now` and transformers' `tojson`. What it cannot run is refused
// when the template is parsed, never half-way through a request.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CHAT_CHATTEMPLATE_H
#define LLMC_RUNTIME_CHAT_CHATTEMPLATE_H

#include "runtime/core/Error.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace llmc::runtime::chat {

/// A template that cannot be parsed or run (the message names its line and
/// column), or a render that fails: the template's raise_exception (the
/// message is the template's own) or an operation on the wrong types.
class ChatTemplateError : public Error {
public:
  using Error::Error;
};

struct TemplateNode;

class ChatTemplate {
public:
  /// Parses `source`; throws ChatTemplateError naming line:column of what it cannot run.
  static ChatTemplate parse(const std::string &source);

  /// Renders with `context` (a JSON object: messages, add_generation_prompt,
  /// bos_token, eos_token, tools, ...).
  std::string render(const nlohmann::json &context) const;
  /// The same, keeping the key order of the request's objects: templates
  /// print tools with tojson and iterate over items(), as Python dicts keep
  /// insertion order.
  std::string render(const nlohmann::ordered_json &context) const;

private:
  explicit ChatTemplate(std::shared_ptr<const TemplateNode> root) : root(std::move(root)) {}

  /// Immutable once parsed: copies share it and render from any thread.
  std::shared_ptr<const TemplateNode> root;
};

} // namespace llmc::runtime::chat

#endif // LLMC_RUNTIME_CHAT_CHATTEMPLATE_H
