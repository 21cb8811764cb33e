"""The errors the C++ runtime raises into Python (llmc._native translates its exceptions)."""


class LlmcRuntimeError(RuntimeError):
    """A failure the runtime reported: a bad artifact, a batch it refuses, a tokenizer file
    it cannot read, ... str(error) is the runtime's one-line message."""


class LlmcRequestError(LlmcRuntimeError, ValueError):
    """A request the engine refuses (the caller's fault): an empty prompt, a token outside
    the vocabulary, a prompt too long for the model, sampling parameters out of range."""
