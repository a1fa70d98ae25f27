import os
from typing import Any, Callable, Literal, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

# A fidelity: scan groups 1..k (1..num_scan_groups), or "full" for all of them.
Fidelity = Union[int, Literal["full"]]
# Feature or field names; a map feature's id may be an int. A lone str is refused.
Names = Sequence[Union[str, int]]

class ImageDataset:
    """An image dataset (a directory holding dataset.pcrd, or one .pcr file).

    Methods may be called from several threads at once.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        engine: str = "auto",
        direct: bool = False,
        remote: Optional[dict[str, object]] = None,
        index_cache_bytes: int = 64 << 20,
    ) -> None:
        """path may be local (str or os.PathLike), http(s):// or s3://. remote sets how remote paths are read: concurrency, max_bytes_in_flight,
        retries, timeout_ms, answer_timeout_ms, hole_limit, max_read, list_page_size, s3_endpoint, s3_region, anonymous,
        etag_is_md5 (RemoteOptions). Opening reads the manifest alone; each file is read and checked when a
        call first needs it, so an error about a file comes from that call. The files' indexes and the
        labels and keys read so far are kept in at most index_cache_bytes (least recently used dropped
        first; what reads in progress hold stays until they end)."""
    def __len__(self) -> int:
        """Images in the dataset."""
    @property
    def num_scan_groups(self) -> int:
        """Scan groups of every image: fidelities run 1..num_scan_groups."""
    @property
    def classes(self) -> list[str]:
        """Class names; label i is classes[i]."""
    @property
    def content_id(self) -> str:
        """16 hex digits identifying the dataset's contents (its files' sizes and
        index checksums, and its class names), whatever path opened it."""
    @property
    def counts(self) -> dict[str, object]:
        """images, records, files, file_bytes, bytes_at_fidelity (the record
        bytes read at each fidelity 1..num_scan_groups) and segment_bytes:
        reads every file's index."""
    def sample(self, index: int) -> Tuple[int, str]:
        """(label, key) of image `index`; the key is its source's relative path.
        Reads the labels and keys of image `index`'s record alone, kept for later calls."""
    def read(self, index: int, fidelity: Fidelity = "full", metadata: bool = False) -> bytes:
        """Image `index` at `fidelity` as a standalone JPEG; with metadata, also the
        APPn and COM segments kept apart (EXIF, XMP, ...): at full fidelity the original's segments."""
    def read_many(self, indices: Sequence[int], fidelity: Fidelity = "full") -> list[bytes]:
        """read() of each index, in one coalesced set of reads, with the GIL released."""
    def lower_fidelity(self, index: int, jpeg: bytes, fidelity: Fidelity, jpeg_fidelity: Fidelity = "full") -> bytes:
        """Image `index` at `fidelity`, cut with no read from `jpeg`, the image as read at
        `jpeg_fidelity`: the bytes read(index, fidelity) gives. ValueError for a fidelity out of
        range or above jpeg_fidelity; CorruptionError when `jpeg` is not that image at that fidelity."""
    @property
    def io_counters(self) -> dict[str, float]:
        """What storage did for this object's reads since it was opened: reads (requests
        completed), ios (operations issued for them), bytes_read and seconds."""
    @property
    def num_records(self) -> int:
        """Records in the dataset."""
    @property
    def field_schema(self) -> list[dict[str, object]]:
        """The images' fields: name, type, present_count and value_count over the dataset."""
    def read_fields(
        self, fields: Names, first_record: int = 0, num_records: Optional[int] = None
    ) -> dict[str, dict[str, npt.NDArray]]:
        """Columns of the fields over the images of the records, in dataset order, as Table.read
        gives them (presence, values, offsets); no image bytes are read."""
    def fields(self, index: int, fields: Names) -> dict[str, object]:
        """Image `index`'s values of the fields (None where it lacks one): int, float, str, bytes
        or a list."""
    def read_record(
        self, record: int, fidelity: Fidelity = "full", fields: Names = (), metadata: bool = False
    ) -> dict[str, object]:
        """One record: labels, keys, jpegs (none with fidelity=0: fields alone) and
        fields, {name: column}; only the streams asked for are read."""
    def record_samples(
        self, record: int, fidelity: Fidelity = "full", fields: Names = ()
    ) -> list[dict[str, object]]:
        """One dict per image of the record: index, key, label, jpeg (none with fidelity=0)
        and fields, {name: value or None} as fields() gives them."""
    def verify(self) -> dict[str, int]:
        """Reads every byte and checks every checksum: files, stripes, streams,
        chunks and bytes checked; CorruptionError naming each damage found."""

class SampleIterator:
    """One rank's share of an epoch, in batches of (indices, labels, jpegs), and with
    `fields` a fourth item, {name: [value or None per image]}.

    Every rank gets len(it) batches, the same on every rank, as torch's
    DistributedSampler: "pad" gives each rank ceil(images / world_size)
    images (at most world_size - 1 repeats, the last batch short), "drop"
    only full batches. With num_workers, this iterator is worker `worker` of
    the rank: it delivers the rank's batches worker, worker + num_workers, ...
    Images are shuffled by (seed, epoch, rank, worker) alone, so state()
    resumes the iteration exactly: pass its seed, epoch and position back.
    Iterate from one thread.
    """

    def __init__(
        self,
        dataset: ImageDataset,
        *,
        batch_size: int,
        fidelity: Fidelity = "full",
        rank: int = 0,
        world_size: int = 1,
        worker: int = 0,
        num_workers: int = 1,
        uneven: str = "pad",
        shuffle: bool = True,
        shuffle_buffer: int = 4096,
        seed: int = 0,
        epoch: int = 0,
        position: int = 0,
        read_ahead: int = 2048,
        fields: Names = (),
    ) -> None:
        """Arguments as the class describes them; read_ahead bounds the images
        read beyond the next batch."""
    def __iter__(self) -> "SampleIterator": ...
    def __next__(self) -> Tuple: ...
    def __len__(self) -> int:
        """Batches per epoch on this rank (a resumed iteration yields the rest of them)."""
    @property
    def num_images(self) -> int:
        """Images this iterator (this rank's worker) delivers in the epoch."""
    def state(self) -> dict[str, int]:
        """{seed, epoch, position}: where the iteration stands, to resume it."""

class BatchDecoder:
    """Decodes batches of JPEGs into one array, N x 3 x size x size (or
    N x size x size x 3 with channels_last), each image cropped before
    decoding, resized with bilinear antialiasing and, for training, flipped.
    dtype "uint8" keeps the pixels; "float32" gives torchvision's ToTensor()
    values, then Normalize(mean, std) with normalize=(mean, std) (1 or 3
    values each), computed in float32; "float16" those values rounded to
    nearest even, as torch's .half().

    crop="random_resized" is torchvision's RandomResizedCrop(size, scale, ratio)
    with RandomHorizontalFlip when flip; crop="center" is Resize(resize) then
    CenterCrop(size). Both give torchvision's bytes on PIL's decode: image i
    is what they make after torch.manual_seed(BatchDecoder.image_seed(seed,
    i)). fast_scale=True decodes at a DCT scale (1/2, 1/4, 1/8) where the
    crop keeps `size` pixels each way: faster, not the same pixels.
    Decoding runs on `threads` C++ threads (0: one per core) with the GIL released,
    by `decoder` (see decode).
    """

    def __init__(
        self,
        *,
        size: int = 224,
        crop: str = "random_resized",
        scale: Tuple[float, float] = (0.08, 1.0),
        ratio: Tuple[float, float] = (3 / 4, 4 / 3),
        resize: int = 256,
        flip: bool = True,
        fast_scale: bool = False,
        channels_last: bool = False,
        normalize: Optional[Tuple[Sequence[float], Sequence[float]]] = None,
        dtype: str = "uint8",
        threads: int = 0,
        decoder: str = "auto",
    ) -> None:
        """Arguments as the class describes them; checked here (ValueError)."""
    def decode(self, jpegs: Sequence[bytes], seed: int = 0) -> npt.NDArray[Any]:
        """The batch of `jpegs`, image i's random choices drawn after
        torch.manual_seed(BatchDecoder.image_seed(seed, i)); an error names the
        image's index in the batch."""
    @staticmethod
    def image_seed(seed: int, i: int) -> int:
        """The torch seed of image i of a batch decoded with `seed`."""

def decode(
    jpeg: bytes | bytearray | memoryview,
    scale: int = 1,
    crop: Optional[Tuple[int, int, int, int]] = None,
    format: str = "rgb",
    strict: bool = True,
    decoder: str = "auto",
) -> npt.NDArray[np.uint8]:
    """Pixels as an H x W x C uint8 array (C: 3 for "rgb", 1 for "gray", the file's for "native";
    CMYK files convert to RGB as PIL converts them).

    crop is (x, y, width, height) in pixels after scaling by 1/scale (1, 2, 4 or 8).
    With strict, libjpeg's corrupt-data warnings are errors (CorruptionError).
    decoder: "libjpeg" (libjpeg-turbo), "pcr" (pcr's own decoder for the
    progressive files pcr writes, libjpeg-turbo for the rest; the same
    pixels) or "auto" (the default: pcr's decoder where it takes the file, the faster of the two).
    """

class Table:
    """A table file, or a directory holding one. Methods may be called from several threads at once."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        engine: str = "auto",
        direct: bool = False,
        remote: Optional[dict[str, object]] = None,
        access_log: Optional[str | os.PathLike[str]] = None,
        job: Optional[str] = None,
    ) -> None:
        """remote: as for ImageDataset. access_log: a file each distinct projection
        read is appended to (spec section 14), for pcr-dump popularity; job: the
        job named in its lines (default $PCR_JOB_ID, else host:pid), the same in
        every process of one training job so that it counts once."""
    @property
    def schema(self) -> list[dict[str, object]]:
        """Each feature's name, type, id (None for plain columns),
        present_count and value_count, in the table's order."""
    @property
    def content_id(self) -> str:
        """16 hex digits identifying the table's contents (schema, stripes and
        stream checksums): kept by reorder, different for other values of
        the same shape."""
    @property
    def num_rows(self) -> int:
        """Rows in the table."""
    @property
    def io_counters(self) -> dict[str, float]:
        """What storage did for this object's reads since it was opened: reads (requests
        completed), ios (operations issued for them), bytes_read and seconds."""
    @property
    def num_stripes(self) -> int:
        """Stripes in the table; read() takes a run of them."""
    @property
    def stripe_rows(self) -> list[int]:
        """Rows of each stripe, in order."""
    def read(
        self, features: Names, first_stripe: int = 0, num_stripes: Optional[int] = None
    ) -> dict[str, dict[str, npt.NDArray]]:
        """Each feature's "presence" (bool per row) and "values": int64, uint64, bool, float32,
        float64 or datetime64[s|ms|us|ns] per row (zero where missing); strings, bytes and lists
        add "offsets" (rows + 1) into "values" (uint8 bytes, or the list elements), scored lists
        "scores"."""

def _row_objects(
    values: npt.NDArray, offsets: npt.NDArray[np.uint64], presence: npt.NDArray[np.bool_], kind: str
) -> npt.NDArray[np.object_]:
    """Row r of a read column as a str ("str"), bytes ("bytes") or a view of values ("view"); None where missing."""

def convert_images(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    images_per_record: int = 1024,
    records_per_file: int = 1,
    jobs: int = 0,
    scan_script: str = "spectral5",
    strip_metadata: bool = False,
    skip_bad: bool = False,
    restart: bool = False,
    shuffle: int = 0,
    keep_order: bool = False,
    list: str | os.PathLike[str] = "",
    by_content: bool = False,
    shard: int = 0,
    num_shards: int = 1,
    max_pixels: int = 178956970,
    memory_mb: int = 0,
    fields: str | os.PathLike[str] = "",
    fields_key: str = "path",
    field_types: dict[str, str] = {},
    field_order: Sequence[str] = (),
    shards: Sequence[str] = (),
    exif_orientation: bool = False,
    work_dir: str | os.PathLike[str] = "",
    remote: Optional[dict[str, object]] = None,
    part_size_mb: int = 16,
    multipart_threshold_mb: int = 64,
    upload_concurrency: int = 8,
    upload_memory_mb: int = 256,
    input_endpoint: str = "",
    output_endpoint: str = "",
    progress: Optional[Callable[[dict[str, int]], None]] = None,
) -> dict[str, object]:
    """pcr-convert images: the ImageFolder (or list) at src into the dataset directory out,
    with the per-image fields of the .csv or .jsonl file `fields` keyed by image path.
    Images are written in an order shuffled by the seed `shuffle` (so records mix
    classes), or in source order with keep_order.
    With `shards` (WebDataset tars), see convert_webdataset.
    out may be s3://bucket/prefix: converted into work_dir (default: named after out
    under the temp dir), each file uploaded as it is finished (in parts of
    part_size_mb above multipart_threshold_mb), the manifest last; `remote` as for
    ImageDataset. The same call again after a failure resumes. Files and parts
    go up upload_concurrency at a time, holding upload_memory_mb MiB together
    at most (one always goes). input_endpoint and output_endpoint name the
    stores of s3:// inputs and of an s3:// out where they differ (default
    for both: remote's "s3_endpoint", else AWS_ENDPOINT_URL_S3,
    AWS_ENDPOINT_URL, the profile's endpoint_url, else AWS)."""
def _default_job_id() -> str:
    """$PCR_JOB_ID when set, else "<host name>:<process id>"."""
def _count_access_logs(logs: Sequence[str], table: Optional[str | os.PathLike[str]] = None) -> dict[str, object]: ...
def _fidelity_groups(fidelity: str | int, num_scan_groups: int) -> int:
    """The scan groups fidelity ("full" or 1..num_scan_groups) reads; ValueError otherwise."""
def reorder_table(
    input: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    popularity: Optional[str | os.PathLike[str]] = None,
    stream_order: Optional[Sequence[str]] = None,
) -> dict[str, object]:
    """pcr-convert reorder: the table at input (a file, or a directory holding
    one) rewritten to output (a .pcr path, or a directory) with its streams in
    the order of the popularity file (refused when it was counted on another
    table) or of stream_order, copying the stored streams after checking them.
    Returns {"path", "rows", "stripes", "output_bytes", "notes"}; each note is
    also given as a UserWarning."""
def merge(
    out: str | os.PathLike[str],
    parts: Sequence[str | os.PathLike[str]],
    *,
    work_dir: str | os.PathLike[str] = "",
    remote: Optional[dict[str, object]] = None,
    part_size_mb: int = 16,
    multipart_threshold_mb: int = 64,
    upload_concurrency: int = 8,
    upload_memory_mb: int = 256,
    output_endpoint: str = "",
) -> dict[str, int]:
    """pcr-convert merge: joins the parts of one sharded conversion (every shard
    exactly once; convert_images with shard= and num_shards=) into the dataset
    out, equal byte for byte to the one-process conversion. Record files a
    part holds whole are hard-linked, so a local out must be on the parts'
    filesystem; a file cut between parts (shards are runs of records) is
    joined from its pieces, each stream checked as it is copied. out may be
    s3://bucket/prefix, with work_dir, remote, part_size_mb,
    multipart_threshold_mb, upload_concurrency, upload_memory_mb and
    output_endpoint as for convert_images. Parts may be s3:// (a shard
    converted into s3://) for an s3:// out in their store, which copies
    their whole record files (pieces are read and joined). Returns {"parts", "files", "images", "skipped", "output_bytes"}."""
def convert_table(
    input: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    rows_per_stripe: int = 131072,
    stripe_mb: int = 128,
    split_mb: int = 64,
    stream_order: Sequence[str] = (),
    popularity: str | os.PathLike[str] = "",
    float32: bool = False,
    zstd_level: int = 3,
    encoding: str = "auto",
    column_types: dict[str, str] = {},
    schema: str | os.PathLike[str] | dict[str, str] | None = None,
    strings: bool = False,
    on_bad_value: str = "error",
    delimiter: str = "",
    format: str = "",
    work_dir: str | os.PathLike[str] = "",
    remote: Optional[dict[str, object]] = None,
    part_size_mb: int = 16,
    multipart_threshold_mb: int = 64,
    upload_concurrency: int = 8,
    upload_memory_mb: int = 256,
    input_endpoint: str = "",
    output_endpoint: str = "",
) -> dict[str, object]:
    """pcr-convert table: a .csv, .tsv or .jsonl file, each also gzip- or
    zstd-compressed (.gz, .zst; decompressed into $TMPDIR), into
    out/<stem>.pcr; "-" reads standard input into out/stdin.pcr. `format`
    ("csv", "tsv" or "jsonl"; "": from the input's name) is the input's
    format. `delimiter`
    is the character between CSV cells ("": ",", or a tab for .tsv). `encoding` is
    "auto" (chosen per stream), "plain" (files readers before format 0.5 read),
    or an encoding to force where a stream allows it (spec 13.5). `schema` (a
    JSON file's path, or a dict) and `column_types` (which wins) declare types
    by column name, map feature id, or map ("dense"/"scored": "float32"):
    bool, int64, uint64, float32, float64, timestamp (timestamp_us),
    timestamp_s, timestamp_ms, timestamp_ns, string, bytes. `strings` makes
    undeclared columns strings. `on_bad_value` ("error" or "missing") decides
    what a cell that does not fit its column's type does. A stripe closes at
    rows_per_stripe rows or stripe_mb MiB of raw streams, and never holds rows
    that start in two split_mb MiB splits of the input (so that
    pcr.dask.convert_table writes the same file). out may be s3://bucket/prefix,
    with work_dir, remote and the upload and endpoint options as for convert_images.
    Each note of the report (a column with no values, values stored as
    missing) is also given as a UserWarning."""
