import functools
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

import pcr

README = pathlib.Path(__file__).parents[2] / "README.md"
DOCS = [README, *sorted((README.parent / "doc").glob("*.md"))]


def python_block(starting):
    """The ```python block of the README or doc/ whose first line is `starting`."""
    for doc in DOCS:
        for block in re.findall(r"```python\n(.*?)```", doc.read_text(), re.S):
            if block.startswith(starting):
                return block
    raise AssertionError(f"README.md and doc/ have no python block starting {starting!r}")


@functools.lru_cache(maxsize=None)
def _duckdb_command():
    """node and a NODE_PATH where @duckdb/node-api resolves, or None."""
    node = shutil.which("node")
    if node is None:
        return None
    paths = [p for p in os.environ.get("NODE_PATH", "").split(":") if p]
    npm = shutil.which("npm")
    if npm:
        root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True).stdout.strip()
        if root:
            paths.append(root)
    env = dict(os.environ, NODE_PATH=":".join(paths))
    probe = subprocess.run([node, "-e", "require.resolve('@duckdb/node-api')"], env=env, capture_output=True)
    return (node, env) if probe.returncode == 0 else None


def duckdb(csv, types, sql=None):
    """DuckDB's reading of `csv` with column `types` ({name: DuckDB type}), or
    the result of `sql` over it as the view t, as duckdb_read.js prints it;
    skips the test where DuckDB for node is not installed."""
    command = _duckdb_command()
    if command is None:
        pytest.skip("DuckDB for node (npm install -g @duckdb/node-api) is not installed")
    node, env = command
    script = os.path.join(os.path.dirname(__file__), "duckdb_read.js")
    out = subprocess.run([node, script, str(csv), json.dumps(types)] + ([sql] if sql else []), env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def damaged_copy(dataset, to, record_file=0, mask=0x01):
    """Copies the dataset directory to `to`, flips one byte a third of the way
    into its record_file-th record file (name order), and returns that file."""
    shutil.copytree(dataset, to)
    record = sorted(pathlib.Path(to).glob("records-*.pcr"))[record_file]
    data = bytearray(record.read_bytes())
    data[len(data) // 3] ^= mask
    record.write_bytes(bytes(data))
    return record


@pytest.fixture(scope="session")
def data_dir():
    return pathlib.Path(os.environ.get("PCR_TEST_DATA_DIR", pathlib.Path(__file__).parents[2] / "tests" / "data"))


@pytest.fixture(scope="session")
def sample_dataset(data_dir, tmp_path_factory):
    """The bundled sample converted in records of 5 images."""
    out = tmp_path_factory.mktemp("sample") / "ds"
    summary = pcr.convert_images(str(data_dir / "sample"), str(out), images_per_record=5, jobs=2)
    assert summary["images"] == 24
    return out


def _s3rver(tmp_path_factory):
    """An s3rver on a free loopback port with the bucket pcrtest, stopped after the module."""
    import shutil
    import socket
    import subprocess
    import time

    s3rver = shutil.which("s3rver")
    if s3rver is None:
        pytest.skip("s3rver is not installed (npm install -g s3rver@3)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = tmp_path_factory.mktemp("s3store")
    # Its listings' continuation tokens need the legacy OpenSSL provider on Node 17 and later.
    env = dict(os.environ, NODE_OPTIONS="--openssl-legacy-provider")
    server = subprocess.Popen([s3rver, "-d", str(store), "-a", "127.0.0.1", "-p", str(port), "-s",
                               "--configure-bucket", "pcrtest"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=env)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                assert server.poll() is None, "s3rver exited"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory):
    """An s3rver on a free loopback port with the bucket pcrtest, stopped after the module."""
    yield from _s3rver(tmp_path_factory)


@pytest.fixture(scope="module")
def s3_endpoint_b(tmp_path_factory):
    """A second s3rver, apart from s3_endpoint's."""
    yield from _s3rver(tmp_path_factory)
