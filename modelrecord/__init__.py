__version__ = "0.0.1"

# The public surface, written by hand (nbdev only sets __version__ above): what a user of the package
# needs, listed in nbs/index.ipynb. Each name is defined, and documented, in its chapter: 00_record,
# 01_reader, 02_writer, 04_tables. Everything else stays in its module (`modelrecord.sample`,
# `modelrecord.summary`, ...). The core imports with msgspec alone: `load` and `Tables` need the
# analysis extra (pandas), so they are imported on first use (PEP 562), and are not in `__all__`, so
# that `from modelrecord import *` needs the core only.
from importlib import import_module as _import_module

from .record import (Run, Session, Attempt, Turn, Call, Verify, Block, Usage, Provider, Price, Record,
                     ENDINGS, MODEL_ENDINGS, OUTCOMES, TURN_STATUSES, BLOCK_KINDS, TOKEN_CATEGORIES,
                     ENDED_COMPLETED, ENDED_OVER_BUDGET, ENDED_MALFORMED, ENDED_NO_TOOL_CALL, ENDED_PROVIDER_ERROR,
                     ENDED_HARNESS_ERROR, ENDED_SKIPPED,
                     OUTCOME_OK, OUTCOME_TOOL_ERROR, OUTCOME_PROTOCOL_ERROR, OUTCOME_TRANSPORT_ERROR, OUTCOME_PREVIEW,
                     TURN_OK, TURN_RATE_LIMITED, TURN_SERVER_ERROR, TURN_REQUEST_ERROR, TURN_TRANSPORT_ERROR,
                     BLOCK_TEXT, BLOCK_THINKING, BLOCK_TOOL_CALL,
                     SCHEMA_VERSION, DIR_ENV, MAX_RESULT_BYTES, MAX_TEXT_BYTES, MAX_LINE_BYTES,
                     encode, EncodeError, cap_result, cap_text, refused_outcome)
from .reader import ShardError, Shard, read_shards, read_shard, read, shard_paths
from .writer import Writer, RecordWarning, open_dir, open_writer, release

__all__ = [
    # the six lines of a shard, and what they hold
    "Run", "Session", "Attempt", "Turn", "Call", "Verify", "Block", "Usage", "Provider", "Price", "Record",
    # vocabularies, and the value of each
    "ENDINGS", "MODEL_ENDINGS", "OUTCOMES", "TURN_STATUSES", "BLOCK_KINDS", "TOKEN_CATEGORIES",
    "ENDED_COMPLETED", "ENDED_OVER_BUDGET", "ENDED_MALFORMED", "ENDED_NO_TOOL_CALL", "ENDED_PROVIDER_ERROR",
    "ENDED_HARNESS_ERROR", "ENDED_SKIPPED",
    "OUTCOME_OK", "OUTCOME_TOOL_ERROR", "OUTCOME_PROTOCOL_ERROR", "OUTCOME_TRANSPORT_ERROR", "OUTCOME_PREVIEW",
    "TURN_OK", "TURN_RATE_LIMITED", "TURN_SERVER_ERROR", "TURN_REQUEST_ERROR", "TURN_TRANSPORT_ERROR",
    "BLOCK_TEXT", "BLOCK_THINKING", "BLOCK_TOOL_CALL",
    # the contract's version, where a run records, and the caps
    "SCHEMA_VERSION", "DIR_ENV", "MAX_RESULT_BYTES", "MAX_TEXT_BYTES", "MAX_LINE_BYTES",
    # encoding and capping a value as the reference runner does
    "encode", "EncodeError", "cap_result", "cap_text", "refused_outcome",
    # reading
    "ShardError", "Shard", "read_shards", "read_shard", "read", "shard_paths",
    # writing
    "Writer", "RecordWarning", "open_dir", "open_writer", "release",
]

_LAZY = {"load": "modelrecord.tables", "Tables": "modelrecord.tables"}  # name: the module that defines it


def __getattr__(name: str):
    "`modelrecord.load` and `modelrecord.Tables`, imported from `modelrecord.tables` (and pandas) on first use."
    if name not in _LAZY: raise AttributeError(f"module 'modelrecord' has no attribute {name!r}")
    value = globals()[name] = getattr(_import_module(_LAZY[name]), name)
    return value


def __dir__(): return sorted(set(globals()) | set(_LAZY))
