//===- ChatTemplate.cpp - Hugging Face chat templates ---------------------===//
#include "runtime/chat/ChatTemplate.h"

#include "runtime/chat/JinjaParser.h"
#include "runtime/chat/JinjaRenderer.h"

namespace llmc::runtime::chat {
namespace {

template <typename Json> std::string renderWith(const TemplateNode &root, const Json &context) {
  if (!context.is_object())
    throw ChatTemplateError("the chat template context must be a JSON object");
  Value variables;
  try {
    variables = valueFromJson(context);
  } catch (const RenderError &error) {
    throw ChatTemplateError(std::string("the chat template context: ") + error.what());
  }
  return renderTemplate(root, variables.asDict());
}
} // namespace

ChatTemplate ChatTemplate::parse(const std::string &source) {
  return ChatTemplate(parseTemplate(source));
}

std::string ChatTemplate::render(const nlohmann::json &context) const {
  return renderWith(*root, context);
}

std::string ChatTemplate::render(const nlohmann::ordered_json &context) const {
  return renderWith(*root, context);
}

} // namespace llmc::runtime::chat
