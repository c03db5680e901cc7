"""Exception types the core raises; both are ValueErrors so callers can catch either broadly."""


class BertScopeError(ValueError):
    """Base class for errors a user can act on."""


class InputError(BertScopeError):
    """The text (or other user input) cannot be analysed as given."""


class ModelLoadError(BertScopeError):
    """A checkpoint, config or vocabulary cannot be loaded."""


class MissingHeadError(BertScopeError):
    """The loaded checkpoint lacks the head (MLM, NSP, pooler) a request needs."""
