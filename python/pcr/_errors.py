"""The exceptions pcr raises besides ValueError, FileNotFoundError and OSError."""


class CorruptionError(OSError):
    """Stored bytes fail a check: a checksum, a bound or a structure.

    The message names the file and, for pcr files, the stripe, stream and offset.
    """


class NotSupportedError(ValueError):
    """Well-formed input that pcr does not handle (a 12-bit JPEG, a newer format version)."""
