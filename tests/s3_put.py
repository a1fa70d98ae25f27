"""Uploads every file under ROOT to an S3-compatible store, signed with
SigV4 by Python's own hashlib and hmac (independent of pcr's signer), as
objects BUCKET/<path relative to ROOT>.

usage: s3_put.py ENDPOINT BUCKET ROOT   (credentials S3RVER/S3RVER, s3rver's)
"""
import datetime
import hashlib
import hmac
import os
import sys
import urllib.parse
import urllib.request


def put(endpoint, bucket, key, body, access="S3RVER", secret="S3RVER", region="us-east-1"):
    host = endpoint.split("://")[1]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    sha = hashlib.sha256(body).hexdigest()
    path = "/" + bucket + "/" + urllib.parse.quote(key, safe="/~")
    headers = {"host": host, "x-amz-content-sha256": sha, "x-amz-date": now}
    signed = ";".join(sorted(headers))
    canonical = "\n".join(["PUT", path, "", "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)), signed, sha])
    scope = f"{now[:8]}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", now, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (now[:8], region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    req = urllib.request.Request(endpoint + path, data=body, method="PUT", headers={
        "x-amz-content-sha256": sha, "x-amz-date": now,
        "Authorization": f"AWS4-HMAC-SHA256 Credential={access}/{scope}, SignedHeaders={signed}, Signature={sig}"})
    urllib.request.urlopen(req).read()


if __name__ == "__main__":
    endpoint, bucket, root = sys.argv[1:4]
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as data:
                put(endpoint, bucket, os.path.relpath(p, root), data.read())
