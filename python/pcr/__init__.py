"""pcr: Progressive Compressed Records and feature-flattened tables for training data.

Read an image dataset at a chosen fidelity, decode JPEGs to numpy arrays, read
projections of tables, and convert datasets. Reads, decodes and conversions
release the GIL. Errors: CorruptionError for damaged files, NotSupportedError
for input pcr does not handle, ValueError for bad arguments, FileNotFoundError
and OSError for I/O failures.
"""
from ._errors import CorruptionError, NotSupportedError
from ._pcr import BatchDecoder, ImageDataset, SampleIterator, Table, convert_images, convert_table, decode

__all__ = [
    "BatchDecoder",
    "CorruptionError",
    "ImageDataset",
    "NotSupportedError",
    "SampleIterator",
    "Table",
    "convert_images",
    "convert_table",
    "decode",
]
