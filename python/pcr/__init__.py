"""pcr: Progressive Compressed Records and feature-flattened tables for training data.

Read an image dataset at a chosen fidelity, decode JPEGs to numpy arrays, read
projections of tables, and convert datasets. Reads, decodes and conversions
release the GIL. Errors: CorruptionError for damaged files, NotSupportedError
for input pcr does not handle, ValueError for bad arguments, FileNotFoundError
and OSError for I/O failures.
"""
from ._errors import CorruptionError, NotSupportedError
from ._pcr import BatchDecoder, ImageDataset, SampleIterator, Table, convert_images, convert_table, decode



def convert_webdataset(shards, out, **options):
    """pcr-convert webdataset: WebDataset tar shards (paths or brace patterns such as
    "shard-{000000..000099}.tar") into the dataset directory out. Takes the options of
    convert_images but list, by_content and fields; each member extension becomes a field."""
    if isinstance(shards, str):
        shards = [shards]
    return convert_images("", out, shards=list(shards), **options)


__all__ = [
    "BatchDecoder",
    "CorruptionError",
    "ImageDataset",
    "NotSupportedError",
    "SampleIterator",
    "Table",
    "convert_images",
    "convert_table",
    "convert_webdataset",
    "decode",
]
