"""A job's environment variables as ``--env`` gives them (``collective``, ``doctor``,
``snapshot``): one check of the words, so every command refuses the same ones in the same
line; kept apart from the pricing so that a command reading a log costs no engine import."""

from __future__ import annotations

from collections.abc import Iterable

from fabricui.errors import ConfigError

#: Variable prefixes of a job's environment the engine reads: NCCL's, libfabric's and the
#: aws-ofi-nccl plugin's.
JOB_ENV = ("NCCL_", "FI_", "OFI_NCCL_")


def job_settings(settings: Iterable[str]) -> dict[str, str]:
    """``NAME=value`` words as a mapping, each name a job variable (``JOB_ENV``), the
    last of a name winning.

    Args:
        settings: ``NCCL_ALGO=ring`` ... (``--env``).

    Raises:
        ConfigError: A word that is not ``NCCL_NAME=value``, ``FI_NAME=value`` or
            ``OFI_NCCL_NAME=value``.
    """
    env: dict[str, str] = {}
    for setting in settings:
        name, sep, value = setting.partition("=")
        name = name.strip()
        prefix = next((p for p in JOB_ENV if name.startswith(p)), None)
        if not sep or prefix is None or not name[len(prefix) :].replace("_", "").isalnum():
            raise ConfigError(
                f"--env {setting!r}: give NCCL_NAME=value (or libfabric's FI_NAME=value, "
                "aws-ofi-nccl's OFI_NCCL_NAME=value), "
                "e.g. NCCL_ALGO=ring"
            )
        env[name] = value.strip()
    return env
