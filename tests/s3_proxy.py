"""An HTTP proxy in front of an S3 test server that misbehaves on purpose
during uploads, for the upload tests.

usage: s3_proxy.py PORT UPSTREAM_PORT MODE
MODE: slow-parts (each part upload waits 2 s first), flaky-parts (every
other part upload is answered 503 without reaching the store, and the
first upload of a whole object has its connection dropped), down (every
PUT and POST answered 503, but for the write check's probe), no-manifest (PUTs of dataset.pcrd answered
503), complete-error (every CompleteMultipartUpload answered 200 with an
<Error> body, as S3 may), complete-error-once (the first one only),
stall-parts (the first part upload is read, then left unanswered for a
minute), flip-puts (of every three PUTs, one has a byte of its body
changed on its way, and is answered 400 BadDigest where its Content-MD5
tells, as S3 does), complete-lost (the first CompleteMultipartUpload reaches the store,
and its connection closes before any answer), slow-manifest (PUTs of dataset.pcrd reach the store, and their
answer comes a minute later), flaky-gets (of every six GETs, one is
answered 503 SlowDown and one is cut short, its connection closed halfway
through the body or its body half the length asked for, in turn), flip-gets
(of every five GETs of an object, one has a byte of its body changed, its
headers as the store sent them), flip-all (every GET of an object so), none.
These may be joined by commas with any of: crc32c (HEAD answers carry the
object's x-amz-checksum-crc32c), kms (ETags in answers and listings are not
the objects' MD5s, and answers say x-amz-server-side-encryption: aws:kms, as
for SSE-KMS), etag-not-md5 (the same ETags without that header), repeat-keys
(each listing page holds its first key twice), list-uploads (the proxy keeps
the multipart uploads created through it and answers ListMultipartUploads
itself, for stores that cannot), create-lost (the first
CreateMultipartUpload reaches the store, and its connection closes before
any answer), no-list (as for a role without s3:ListBucket: listings, and
GETs and HEADs of keys that do not exist, are answered 403 AccessDenied),
no-put (as for a role without s3:PutObject: PUTs answered 403), no-get (as
for a role without s3:GetObject: GETs and HEADs of objects answered 403).
slow-puts (each PUT of a whole object waits 0.3 s first). With
S3_PROXY_LOG set, each request's method and path are appended to that
file, a line each, and for a PUT "puts=N bytes=B": the PUTs being handled
(until their answers start) and their bodies' bytes, itself included.
"""
import base64
import hashlib
import re
import http.client
import http.server
import os
import sys
import threading
import time
import urllib.parse

port, upstream = int(sys.argv[1]), int(sys.argv[2])
mode, *flags = sys.argv[3].split(",")
if mode in ("crc32c", "kms", "etag-not-md5", "repeat-keys", "list-uploads", "create-lost", "no-list", "no-put",
            "no-get", "slow-puts"):
    flags.append(mode)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


real_etags = {}  # the ETags other_etag made, to their objects' own
open_uploads = {}  # upload id: key, of the uploads created through the proxy and neither completed nor aborted
creates = 0


def list_uploads(path):
    """A ListMultipartUploadsResult of the open uploads whose keys start with the query's prefix."""
    bucket, _, query = path.lstrip("/").partition("?")
    params = urllib.parse.parse_qs(query, keep_blank_values=True)
    prefix = params.get("prefix", [""])[0]
    entries = "".join(f"<Upload><Key>{key}</Key><UploadId>{upload}</UploadId></Upload>"
                      for upload, key in sorted(open_uploads.items(), key=lambda u: u[1]) if key.startswith(prefix))
    return (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListMultipartUploadsResult><Bucket>{bucket.rstrip('/')}"
            f"</Bucket><Prefix>{prefix}</Prefix><IsTruncated>false</IsTruncated>{entries}"
            "</ListMultipartUploadsResult>").encode()


def other_etag(etag):
    """An ETag of 32 hex digits that is not the object's MD5."""
    fake = hashlib.md5(etag.strip('"').encode() + b"kms").hexdigest()
    real_etags[fake] = etag.strip('"')
    return fake
count = 0
gets = 0
completes = 0
stalled = False
puts = put_bytes = 0  # PUTs being handled, and their bodies' bytes

lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def access_denied(self):
        error = b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
        self.send_response(403)
        self.send_header("Content-Length", str(len(error)) if self.command != "HEAD" else "0")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(error)

    def slow_down(self):
        error = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
        self.send_response(503)
        self.send_header("Content-Length", str(len(error)))
        self.end_headers()
        self.wfile.write(error)

    def forward(self):
        """Handles the request; PUTs counted while they are handled, their
        count and body bytes then (this one's included) logged."""
        global puts, put_bytes
        length = int(self.headers.get("Content-Length", "0")) if self.command == "PUT" else 0
        with lock:
            if self.command == "PUT":
                puts += 1
                put_bytes += length
            if os.environ.get("S3_PROXY_LOG"):
                with open(os.environ["S3_PROXY_LOG"], "a") as log:
                    log.write(f"{self.command} {self.path}" + (f" puts={puts} bytes={put_bytes}" if length or
                                                               self.command == "PUT" else "") + "\n")
        self.counted = length if self.command == "PUT" else None
        try:
            if "slow-puts" in flags and self.command == "PUT" and "partNumber=" not in self.path:
                time.sleep(0.3)
            self.handle_request()
        finally:
            self.uncount()

    def uncount(self):
        """A PUT stops counting as its answer starts, before the client can send another."""
        global puts, put_bytes
        if getattr(self, "counted", None) is not None:
            with lock:
                puts -= 1
                put_bytes -= self.counted
            self.counted = None

    def send_response(self, *args, **kwargs):
        self.uncount()
        super().send_response(*args, **kwargs)

    def handle_request(self):
        global count, gets, completes, stalled, creates
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        part = "partNumber=" in self.path
        complete = self.command == "POST" and "uploadId=" in self.path
        create = self.command == "POST" and self.path.split("?")[-1].startswith("uploads")
        track = "list-uploads" in flags or mode == "create-lost"
        if track and self.command == "GET" and "?" in self.path and "uploads" in self.path.split("?")[1].split("&")[0]:
            answer = list_uploads(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        if "no-put" in flags and self.command == "PUT":
            self.access_denied()
            return
        if "no-get" in flags and self.command in ("GET", "HEAD") and "/" in self.path.split("?")[0].strip("/"):
            self.access_denied()
            return
        if "no-list" in flags and self.command == "GET" and "list-type=" in self.path:
            self.access_denied()
            return
        with lock:
            count += 1
            n = count
            gets += self.command == "GET"
            g = gets
            completes += complete
            stall = mode == "stall-parts" and part and not stalled
            stalled = stalled or stall
        if mode == "flip-puts" and self.command == "PUT" and body and n % 3 == 0:
            at = len(body) // 2
            body = body[:at] + bytes([body[at] ^ 0x08]) + body[at + 1:]
            sent = self.headers.get("Content-MD5")
            if sent and base64.b64encode(hashlib.md5(body).digest()).decode() != sent:
                error = b"<Error><Code>BadDigest</Code><Message>The Content-MD5 you specified did not match what " \
                        b"we received.</Message></Error>"
                self.send_response(400)
                self.send_header("Content-Length", str(len(error)))
                self.end_headers()
                self.wfile.write(error)
                return
        if complete and ("kms" in flags or "etag-not-md5" in flags):
            for fake, real in list(real_etags.items()):
                body = body.replace(fake.encode(), real.encode())
            self.headers.replace_header("Content-Length", str(len(body)))
        if complete and (mode == "complete-error" or (mode == "complete-error-once" and completes == 1)):
            error = b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InternalError</Code>" \
                    b"<Message>We encountered an internal error. Please try again.</Message></Error>"
            self.send_response(200)
            self.send_header("Content-Length", str(len(error)))
            self.end_headers()
            self.wfile.write(error)
            return
        if mode == "slow-parts" and part:
            time.sleep(2)
        if stall:
            time.sleep(60)
            return
        flaky_get = mode == "flaky-gets" and self.command == "GET"
        if flaky_get and g % 6 == 1:
            self.slow_down()
            return
        no_manifest = mode == "no-manifest" and self.command == "PUT" and self.path.split("?")[0].endswith(".pcrd")
        if (mode == "flaky-parts" and part and n % 2 == 0) or (mode == "down" and self.command in ("PUT", "POST") and
                                                                 ".pcr-write-check-" not in self.path) or \
                no_manifest:
            self.slow_down()
            return
        if mode == "flaky-parts" and self.command == "PUT" and not part and n < 6:
            self.close_connection = True
            self.connection.shutdown(2)
            return
        conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
        conn.request(self.command, self.path, body=body if self.command not in ("GET", "HEAD") else None,
                     headers=headers)
        r = conn.getresponse()
        data = r.read()
        upload_id = urllib.parse.parse_qs(self.path.partition("?")[2]).get("uploadId", [""])[0]
        key = urllib.parse.unquote(self.path.partition("?")[0].lstrip("/").partition("/")[2])
        if track and create and r.status == 200:
            created = re.search(rb"<UploadId>(.*?)</UploadId>", data)
            if created:
                open_uploads[created.group(1).decode()] = key
            creates += 1
            if mode == "create-lost" and creates == 1:
                self.close_connection = True
                self.connection.shutdown(2)
                return
        if track and upload_id and ((complete and r.status == 200 and b"<Error>" not in data) or
                                    self.command == "DELETE"):
            open_uploads.pop(upload_id, None)
        if mode == "complete-lost" and complete and completes > 1:
            error = b"<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>"
            self.send_response(404)
            self.send_header("Content-Length", str(len(error)))
            self.end_headers()
            self.wfile.write(error)
            return
        if mode == "complete-lost" and complete and completes == 1:
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if mode == "slow-manifest" and self.command == "PUT" and self.path.split("?")[0].endswith(".pcrd"):
            time.sleep(60)
        cut = flaky_get and g % 6 == 4 and len(data) > 1
        listing = "list-type=" in self.path or "uploads" in self.path
        if mode in ("flip-gets", "flip-all") and self.command == "GET" and not listing and r.status in (200, 206) and data and \
                (mode == "flip-all" or g % 5 == 2):
            at = (len(data) * 2) // 3
            data = data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1:]
        if cut and g % 12 == 4:
            data = data[: len(data) // 2]  # a short body, its length as sent
            cut = False
        if listing and r.status == 200 and "repeat-keys" in flags and b"<Contents>" in data:
            a = data.index(b"<Contents>")
            b = data.index(b"</Contents>", a) + len(b"</Contents>")
            data = data[:b] + data[a:b] + data[b:]
        if (listing or complete) and r.status == 200 and ("kms" in flags or "etag-not-md5" in flags):
            def swap(m):
                return b"<ETag>" + other_etag(m.group(1).decode().replace("&quot;", "")).encode() + b"</ETag>"
            data = re.sub(rb"<ETag>(.*?)</ETag>", swap, data)
        if "no-list" in flags and self.command in ("GET", "HEAD") and r.status == 404:
            self.access_denied()
            return
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() == "etag" and ("kms" in flags or "etag-not-md5" in flags):
                v = '"' + other_etag(v) + '"'
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        if not listing and r.status in (200, 206) and "kms" in flags:
            self.send_header("x-amz-server-side-encryption", "aws:kms")
        if self.command == "HEAD" and r.status == 200 and "crc32c" in flags:
            whole = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
            whole.request("GET", self.path)
            value = crc32c(whole.getresponse().read()).to_bytes(4, "big")
            whole.close()
            self.send_header("x-amz-checksum-crc32c", base64.b64encode(value).decode())
        self.send_header("Content-Length", r.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data)))
        self.end_headers()
        if cut:  # the connection closed halfway through the body
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
        elif self.command != "HEAD":
            self.wfile.write(data)
        conn.close()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = forward


http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
