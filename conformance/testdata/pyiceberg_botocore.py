#!/usr/bin/python3
"""PyIceberg's remote signing on Debian's python3-botocore, against countersign.

The signer below is PyIceberg's S3V4RestSigner (pyiceberg/io/fsspec.py,
as of PyIceberg 0.11 and 0.12) step for step: on botocore's
"before-sign.s3" event it POSTs {method, region, uri, headers} (no body,
not even for DeleteObjects) with an Authorization header (the REST
catalog's auth manager's, which PyIceberg 0.11+ hands to the FileIO as
property "auth.manager" (iceberg-python #2846), else "Bearer <token>")
and the header.* properties to
<s3.signer.uri>/<s3.signer.endpoint>, then *appends* every returned header
to the request with add_header (values joined with ", ") and takes the
returned uri. The S3 client signs nothing itself (signature_version
UNSIGNED), exactly as PyIceberg configures s3fs.

The only additions observe: which headers ended up twice on the request
(iceberg-python#2422), what botocore actually sent (before-send), and each
operation's outcome. The script prints one JSON document on stdout; the Go
test (pyiceberg_test.go) asserts on it.

Usage: pyiceberg_botocore.py CONFIG_JSON
  CONFIG_JSON: {"endpoint", "signer_uri", "token", "bucket", "prefix",
                "mode": "workload" | "denied-write" | "wrong-secret",
                "auth": optional {"client_id", "client_secret", "token_url"}:
                        PyIceberg's OAuth2AuthManager (client credentials)}

PyIceberg itself cannot be installed here (its registry is not reachable
and Debian packages neither it nor s3fs or aiobotocore): this copy of its
signer and auth manager runs on Debian's botocore instead.
"""

import hashlib
import json
import os
import struct
import sys
import time

import botocore
import botocore.session
import requests
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError
from requests import HTTPError

S3_SIGNER_URI = "s3.signer.uri"
S3_SIGNER_ENDPOINT = "s3.signer.endpoint"
S3_SIGNER_ENDPOINT_DEFAULT = "v1/aws/s3/sign"
URI = "uri"
TOKEN = "token"
AUTH_MANAGER = "auth.manager"  # pyiceberg.catalog.rest.auth.AUTH_MANAGER


class SignError(Exception):
    """pyiceberg.exceptions.SignError."""


def get_header_properties(properties):
    return {k[len("header."):]: v for k, v in properties.items() if k.startswith("header.")}


class OAuth2TokenProvider:
    """pyiceberg.catalog.rest.auth.OAuth2TokenProvider: client credentials
    at token_url, the token kept until refresh_margin seconds before it
    expires."""

    def __init__(self, client_id, client_secret, token_url, scope=None, refresh_margin=60, expires_in=None):
        self.client_id, self.client_secret, self.token_url = client_id, client_secret, token_url
        self.scope, self.refresh_margin, self.expires_in = scope, refresh_margin, expires_in
        self._token = None
        self._expires_at = 0

    def _refresh_token(self):
        data = {"grant_type": "client_credentials", "client_id": self.client_id, "client_secret": self.client_secret}
        if self.scope:
            data["scope"] = self.scope
        response = requests.post(self.token_url, data=data)
        response.raise_for_status()
        result = response.json()
        expires_in = result.get("expires_in", self.expires_in)
        if expires_in is None:
            raise ValueError("The expiration time of the Token must be provided by the Server in the Access Token Response in `expires_in` field, or by the PyIceberg Client.")
        self._token = result["access_token"]
        self._expires_at = time.monotonic() + expires_in - self.refresh_margin

    def get_token(self):
        if not self._token or time.monotonic() >= self._expires_at:
            self._refresh_token()
        return self._token


class OAuth2AuthManager:
    """pyiceberg.catalog.rest.auth.OAuth2AuthManager."""

    def __init__(self, client_id, client_secret, token_url, scope=None, refresh_margin=60, expires_in=None):
        self.token_provider = OAuth2TokenProvider(client_id, client_secret, token_url, scope, refresh_margin, expires_in)

    def auth_header(self):
        return f"Bearer {self.token_provider.get_token()}"


class S3V4RestSigner:
    """pyiceberg.io.fsspec.S3V4RestSigner, plus observation."""

    def __init__(self, properties, observations):
        self.properties = properties
        self._session = requests.Session()
        self.observations = observations

    def __call__(self, request, **kwargs):
        # ---- PyIceberg's S3V4RestSigner.__call__ ----
        signer_url = self.properties.get(S3_SIGNER_URI, self.properties[URI]).rstrip("/")
        signer_endpoint = self.properties.get(S3_SIGNER_ENDPOINT, S3_SIGNER_ENDPOINT_DEFAULT)

        signer_headers = {}

        auth_header = None
        if auth_manager := self.properties.get(AUTH_MANAGER):
            auth_header = auth_manager.auth_header()
        elif token := self.properties.get(TOKEN):
            auth_header = f"Bearer {token}"

        if auth_header:
            signer_headers["Authorization"] = auth_header

        signer_headers.update(get_header_properties(self.properties))

        signer_body = {
            "method": request.method,
            "region": request.context["client_region"],
            "uri": request.url,
            "headers": {key: [val] for key, val in request.headers.items()},
        }

        response = self._session.post(f"{signer_url}/{signer_endpoint.strip()}", headers=signer_headers, json=signer_body)
        try:
            response.raise_for_status()
            response_json = response.json()
        except HTTPError as e:
            self.observations.append({
                "operation": kwargs.get("operation_name"),
                "request": signer_body,
                "status": response.status_code,
                "error": response.text,
            })
            raise SignError(f"Failed to sign request {response.status_code}: {signer_body}") from e

        for key, value in response_json["headers"].items():
            request.headers.add_header(key, ", ".join(value))

        request.url = response_json["uri"]
        # ---- end of PyIceberg's code; the rest only observes ----

        names = {k.lower() for k in request.headers.keys()}
        duplicates = {}
        for name in sorted(names):
            values = request.headers.get_all(name)
            if len(values) > 1:
                duplicates[name] = values
        self.observations.append({
            "operation": kwargs.get("operation_name"),
            "request": signer_body,
            "status": response.status_code,
            "response": response_json,
            "duplicates": duplicates,
            "conflicts": {k: v for k, v in duplicates.items() if len(set(v)) > 1},
        })


def parquet_bytes(size, footer=b'{"schema":"id:long"}'):
    body = os.urandom(size - len(footer) - 12)
    return b"PAR1" + body + footer + struct.pack("<I", len(footer)) + b"PAR1", footer


def report(results, observations, sent):
    # botocore keeps some prepared header values as bytes.
    def text(o):
        return o.decode("utf-8", "replace") if isinstance(o, bytes) else repr(o)

    print(json.dumps({"botocore": botocore.__version__, "results": results, "observations": observations, "sent": sent}, default=text))


def main():
    cfg = json.loads(sys.argv[1])
    properties = {
        # The REST catalog's own URI is always among the properties; PyIceberg
        # evaluates properties[URI] even when s3.signer.uri is set, and the
        # signer goes to s3.signer.uri.
        URI: "http://127.0.0.1:9/catalog-not-contacted",
        "s3.signer": "S3V4RestSigner",
        S3_SIGNER_URI: cfg["signer_uri"],
        TOKEN: cfg["token"],
        "header.X-Iceberg-Access-Delegation": "remote-signing",
    }
    if auth := cfg.get("auth"):
        # RestCatalog._load_file_io: merged_properties[AUTH_MANAGER] = self._auth_manager
        properties[AUTH_MANAGER] = OAuth2AuthManager(**auth)
    observations = []
    sent = []
    results = []

    session = botocore.session.get_session()
    client = session.create_client(
        "s3",
        region_name="us-east-1",
        endpoint_url=cfg["endpoint"],
        config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    signer = S3V4RestSigner(properties, observations)
    client.meta.events.unregister("before-sign.s3", unique_id=1925)
    client.meta.events.register_last("before-sign.s3", signer, unique_id=1925)

    def before_send(request, **kwargs):
        sent.append({
            "method": request.method,
            "url": request.url,
            "x-amz-content-sha256": request.headers.get("x-amz-content-sha256"),
            "header_names": sorted(request.headers.keys()),
        })

    client.meta.events.register("before-send.s3", before_send)

    # Newer botocore (>= 1.36) already carries a payload header when the
    # signer is called; the case of iceberg-python#2422. Emulated for one
    # PutObject, in botocore's own spelling, before PyIceberg's hook runs.
    def preset_payload_hash(request, **kwargs):
        if request.context.get("preset_payload_hash"):
            body = request.body if isinstance(request.body, bytes) else request.body.read()
            if hasattr(request.body, "seek"):
                request.body.seek(0)
            request.headers["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()

    client.meta.events.register_first("before-sign.s3.PutObject", preset_payload_hash)

    def mark_preset(params, context, **kwargs):
        if params.get("Metadata", {}).get("preset-hash") == "1":
            context["preset_payload_hash"] = True

    client.meta.events.register("before-parameter-build.s3.PutObject", mark_preset)

    def step(name, fn):
        entry = {"step": name}
        try:
            entry["value"] = fn()
            entry["ok"] = True
        except SignError as e:
            entry.update(ok=False, error_type="SignError", error=str(e))
        except ClientError as e:
            entry.update(ok=False, error_type="ClientError", error=str(e),
                         code=e.response.get("Error", {}).get("Code"))
        except Exception as e:  # noqa: BLE001 - reported to the Go test
            entry.update(ok=False, error_type=type(e).__name__, error=str(e))
        results.append(entry)
        return entry

    bucket, prefix = cfg["bucket"], cfg["prefix"]
    mode = cfg["mode"]

    if mode in ("wrong-secret", "denied-write"):
        step("PutObject", lambda: client.put_object(Bucket=bucket, Key=prefix + "x.parquet", Body=b"PAR1")["ETag"])
        if mode == "denied-write":
            step("ListObjectsV2", lambda: sorted(o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])))
        report(results, observations, sent)
        return

    small, small_footer = parquet_bytes(200 * 1024)
    large, _ = parquet_bytes(5 * 1024 * 1024 + 4321)
    k_small = prefix + "data/00000-0-small.parquet"
    k_hashed = prefix + "data/00001-0-hashed.parquet"
    k_large = prefix + "data/00002-0-large.parquet"

    step("PutObject", lambda: client.put_object(Bucket=bucket, Key=k_small, Body=small, ContentType="application/octet-stream")["ETag"])
    step("PutObject preset x-amz-content-sha256", lambda: client.put_object(
        Bucket=bucket, Key=k_hashed, Body=small, Metadata={"preset-hash": "1"})["ETag"])

    def multipart():
        up = client.create_multipart_upload(Bucket=bucket, Key=k_large)["UploadId"]
        parts = []
        for n, chunk in enumerate([large[: 5 * 1024 * 1024], large[5 * 1024 * 1024:]], start=1):
            etag = client.upload_part(Bucket=bucket, Key=k_large, UploadId=up, PartNumber=n, Body=chunk)["ETag"]
            parts.append({"ETag": etag, "PartNumber": n})
        client.complete_multipart_upload(Bucket=bucket, Key=k_large, UploadId=up, MultipartUpload={"Parts": parts})
        return len(parts)

    step("MultipartUpload", multipart)
    step("HeadObject", lambda: client.head_object(Bucket=bucket, Key=k_small)["ContentLength"])

    def footer():
        tail = client.get_object(Bucket=bucket, Key=k_small, Range="bytes=-8")["Body"].read()
        assert tail[4:] == b"PAR1", tail
        flen = struct.unpack("<I", tail[:4])[0]
        size = len(small)
        got = client.get_object(Bucket=bucket, Key=k_small, Range=f"bytes={size - 8 - flen}-{size - 9}")["Body"].read()
        assert got == small_footer, got
        mid = client.get_object(Bucket=bucket, Key=k_large, Range="bytes=5242000-5243000")["Body"].read()
        assert mid == large[5242000:5243001], "ranged read across the part boundary differs"
        whole = client.get_object(Bucket=bucket, Key=k_hashed)["Body"].read()
        assert whole == small, "object written with a preset hash differs"
        return flen

    step("GetObject ranges", footer)
    step("ListObjectsV2", lambda: sorted(o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]))
    # PyIceberg deletes through s3fs, which uses DeleteObjects; PyIceberg's
    # signer sends no body, so a signer that decides every key cannot
    # authorize it.
    step("DeleteObjects", lambda: client.delete_objects(Bucket=bucket, Delete={
        "Objects": [{"Key": k} for k in (k_small, k_hashed, k_large)], "Quiet": True}).get("Errors", []))
    for k in (k_small, k_hashed, k_large):
        step("DeleteObject", lambda k=k: client.delete_object(Bucket=bucket, Key=k)["ResponseMetadata"]["HTTPStatusCode"])
    step("ListObjectsV2 after delete", lambda: sorted(o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])))

    report(results, observations, sent)


if __name__ == "__main__":
    main()
