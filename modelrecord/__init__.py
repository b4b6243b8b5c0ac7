__version__ = "0.0.1"

# The public surface of the core: record types, vocabularies, caps, encoding, the reader and the
# writer. Each name is defined (and documented) in its notebook: 00_record, 01_reader, 02_writer.
# Analysis (modelrecord.tables, .summary, .plots) and the explorer are extras imported on their own,
# so `import modelrecord` never needs pandas, matplotlib or ipywidgets.
from .record import *  # noqa: F401,F403
from .reader import ShardError, Shard, read_shards, read_shard, read, shard_paths  # noqa: F401
from .writer import Writer, RecordWarning, open_writer, open_dir, release  # noqa: F401
