"""One exception hierarchy for vertimrf.

Every error raised at a public entry point derives from :class:`VertimrfError`, and its
message says what was wrong and how to fix it.
"""


class VertimrfError(Exception):
    """Base class of every error vertimrf raises on purpose."""


class DomainError(VertimrfError, ValueError):
    """A table or value does not fit its public domain specification."""


class RecordIDError(VertimrfError, ValueError):
    """Record IDs are missing, duplicated or of an unsupported type."""


class KeyMaterialError(VertimrfError, ValueError):
    """A shared secret or derived hash key is unusable."""


class PrivacyBudgetError(VertimrfError, ValueError):
    """A privacy parameter is invalid or a release would exceed the budget."""


class PrivacyError(VertimrfError, ValueError):
    """A run would not be differentially private and the user has not accepted that.

    Raised for the paper's FM sketches (and the xxh64 hash, which is not a PRF) unless
    ``allow_non_dp=True`` is set.
    """


class ModelTooLargeError(VertimrfError, MemoryError):
    """A graphical model would exceed the configured cell limit."""


class ModelShrunkWarning(UserWarning):
    """The server's fit ran out of memory, or over a cell limit, and fitted again from the
    same releases with a smaller model (post-processing: no budget spent again)."""


class ConfigError(VertimrfError, ValueError):
    """A configuration value is missing, out of range or inconsistent."""


class MessageError(VertimrfError, ValueError):
    """A party message file is corrupt, tampered with or inconsistent."""


class MissingMessageError(MessageError):
    """A message a role needs has not arrived (yet)."""


class ChannelError(MessageError):
    """A deal or blob cannot be opened: wrong recipient, wrong run, replayed, foreign or altered."""


class ServiceError(VertimrfError):
    """The network service refused a request, or could not be reached in time."""


class RunFailedError(ServiceError):
    """The run has failed (a role said so): every role stops."""


class StepError(VertimrfError):
    """A role's step failed in a way vertimrf did not expect (a bug): one line naming the
    role, the step and the exception, so that the role can tell the others and stop."""


RUN_CHANGED = (
    "this run has released; a corrected table needs a new config (a new run), which spends a "
    "new budget"
)


class RunChangedError(MessageError):
    """An input of a run (a party's data, a deal, a request) changed after the run used it:
    the same run on other data would publish the difference, so it is refused."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what}: {RUN_CHANGED}.")
