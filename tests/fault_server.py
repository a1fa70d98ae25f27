"""An HTTP server of the files under ROOT that answers single byte ranges and
damages every Nth GET on purpose, for the network tests.

usage: fault_server.py ROOT PORT FAULT EVERY [DIGEST]
FAULT: 503 (a server error with an S3-style body), drop (the connection
closes before the body ends), short (a 206 whose Content-Length and body are
half the range), shift (a 206 of the range one byte on), flip (one body byte
changed: the first one with EVERY 1, else one that moves from answer to
answer), stall (headers and half the body, then nothing for a minute),
hang (nothing at all for a minute, HEADs included),
none. DIGEST: content-md5 (each body carries the Content-MD5 of the bytes
it should hold), repr-digest (HEAD and GET answers carry the file's
Repr-Digest, SHA-256), none (the default, as nginx).
"""
import base64
import hashlib
import http.server
import os
import sys
import threading
import time

root, port, fault, every = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
digest = sys.argv[5] if len(sys.argv) > 5 else "none"


def repr_digest(path):
    with open(path, "rb") as f:
        return "sha-256=:" + base64.b64encode(hashlib.sha256(f.read()).digest()).decode() + ":"
count = 0
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def target(self):
        path = os.path.normpath(os.path.join(root, self.path.lstrip("/")))
        return path if path.startswith(os.path.abspath(root)) and os.path.isfile(path) else None

    def do_HEAD(self):
        if fault == "hang":
            time.sleep(60)
            return
        path = self.target()
        if path is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(os.path.getsize(path)))
        if digest == "repr-digest":
            self.send_header("Repr-Digest", repr_digest(path))
        self.end_headers()

    def do_GET(self):
        global count
        path = self.target()
        if path is None:
            self.send_error(404)
            return
        with lock:
            count += 1
            faulty = fault != "none" and count % every == 0
        if faulty and fault == "hang":
            time.sleep(60)
            return
        size = os.path.getsize(path)
        first, last = 0, size - 1
        rng = self.headers.get("Range", "")
        if rng.startswith("bytes="):
            a, b = rng[6:].split("-")
            first, last = int(a), min(int(b), size - 1)
        with open(path, "rb") as f:
            f.seek(first)
            body = f.read(last - first + 1)
        if faulty and fault == "503":
            error = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
            self.send_response(503)
            self.send_header("Content-Length", str(len(error)))
            self.end_headers()
            self.wfile.write(error)
            return
        if faulty and fault == "short":
            body = body[: len(body) // 2]
        if faulty and fault == "shift" and last + 1 < size:
            first, last = first + 1, last + 1
            with open(path, "rb") as f:
                f.seek(first)
                body = f.read(last - first + 1)
        self.send_response(206 if rng else 200)
        self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.send_header("Content-Length", str(len(body)))
        if digest == "content-md5":
            self.send_header("Content-MD5", base64.b64encode(hashlib.md5(body).digest()).decode())
        if digest == "repr-digest":
            self.send_header("Repr-Digest", repr_digest(path))
        self.end_headers()
        if faulty and fault == "drop":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if faulty and fault == "stall":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            time.sleep(60)
            return
        if faulty and fault == "flip" and body:
            at = 0 if every == 1 else (count * 7919) % len(body)  # every 1: the same byte each time, as stored
            body = body[:at] + bytes([body[at] ^ 0x40]) + body[at + 1:]
        self.wfile.write(body)


server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
server.daemon_threads = True
server.serve_forever()
