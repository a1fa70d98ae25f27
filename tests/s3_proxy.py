"""An HTTP proxy in front of an S3 test server that misbehaves on purpose
during uploads, for the upload tests.

usage: s3_proxy.py PORT UPSTREAM_PORT MODE
MODE: slow-parts (each part upload waits 2 s first), flaky-parts (every
other part upload is answered 503 without reaching the store, and the
first upload of a whole object has its connection dropped), down (every
PUT and POST answered 503), no-manifest (PUTs of dataset.pcrd answered
503), complete-error (every CompleteMultipartUpload answered 200 with an
<Error> body, as S3 may), complete-error-once (the first one only),
stall-parts (the first part upload is read, then left unanswered for a
minute), slow-manifest (PUTs of dataset.pcrd reach the store, and their
answer comes a minute later), flaky-gets (of every six GETs, one is
answered 503 SlowDown and one is cut short, its connection closed halfway
through the body or its body half the length asked for, in turn), none.
"""
import http.client
import http.server
import sys
import threading
import time

port, upstream, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
count = 0
gets = 0
completes = 0
stalled = False

lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def slow_down(self):
        error = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
        self.send_response(503)
        self.send_header("Content-Length", str(len(error)))
        self.end_headers()
        self.wfile.write(error)

    def forward(self):
        global count, gets, completes, stalled
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        part = "partNumber=" in self.path
        complete = self.command == "POST" and "uploadId=" in self.path
        with lock:
            count += 1
            n = count
            gets += self.command == "GET"
            g = gets
            completes += complete
            stall = mode == "stall-parts" and part and not stalled
            stalled = stalled or stall
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
        if (mode == "flaky-parts" and part and n % 2 == 0) or (mode == "down" and self.command in ("PUT", "POST")) or \
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
        if mode == "slow-manifest" and self.command == "PUT" and self.path.split("?")[0].endswith(".pcrd"):
            time.sleep(60)
        cut = flaky_get and g % 6 == 4 and len(data) > 1
        if cut and g % 12 == 4:
            data = data[: len(data) // 2]  # a short body, its length as sent
            cut = False
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
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
