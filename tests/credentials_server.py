"""A loopback stand-in for the AWS credential endpoints a process on AWS
asks: a container's (ECS, EKS Pod Identity) and an EC2 instance's IMDSv2,
for the credential tests.

usage: credentials_server.py PORT ACCESS_KEY SECRET_KEY
GET /creds answers the key pair when the Authorization header is
"container-token", else 401. IMDSv2: PUT /latest/api/token (with
X-aws-ec2-metadata-token-ttl-seconds) gives a token; GET
/latest/meta-data/iam/security-credentials/ names the role "pcr-role" and
GET .../pcr-role gives the key pair, each only with that token, else 401.
Every request is logged to stdout as "METHOD PATH".
"""
import datetime
import http.server
import json
import sys

port, access, secret = int(sys.argv[1]), sys.argv[2], sys.argv[3]
TOKEN = "imds-token-1"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        print(self.command, self.path, status, flush=True)

    def keys(self):
        expires = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return json.dumps({"Code": "Success", "AccessKeyId": access, "SecretAccessKey": secret, "Token": "session-token",
                           "Expiration": expires})

    def do_PUT(self):
        if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            self.answer(200, TOKEN)
        else:
            self.answer(400, "")

    def do_GET(self):
        if self.path == "/creds":
            if self.headers.get("Authorization") == "container-token":
                self.answer(200, self.keys())
            else:
                self.answer(401, "")
            return
        if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
            self.answer(401, "")
        elif self.path == "/latest/meta-data/iam/security-credentials/":
            self.answer(200, "pcr-role")
        elif self.path == "/latest/meta-data/iam/security-credentials/pcr-role":
            self.answer(200, self.keys())
        else:
            self.answer(404, "")


server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
server.daemon_threads = True
server.serve_forever()
