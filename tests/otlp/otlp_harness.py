"""What the OTLP tests share: Shipper with the OTLP input on free ports, stubs of proto/otlp,
OTLP/HTTP and OTLP/gRPC calls as any sender makes them, and the file output read back."""
import glob
import http.client
import json
import os
import re
import sys
import tempfile
import time

import grpc
from grpc_tools import protoc

sys.path.insert(0, "tests/python")
from wire_compat_test import Shipper  # noqa: E402  (the same process wrapper)

EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
GRPC_LISTENING = re.compile(r"OTLP/gRPC (?:listening|serving) on (\S+)")
HTTP_LISTENING = re.compile(r"OTLP/HTTP serving on (\S+)")

_stubs_dir = None


def otlp():
    """The generated logs_service_pb2 and status_pb2 modules (generated once per process)."""
    global _stubs_dir
    if _stubs_dir is None:
        _stubs_dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        protos = sorted(glob.glob("proto/otlp/*.proto")) + ["proto/rpc/status.proto"]
        if protoc.main(["protoc", "-I.", "-I/usr/include", f"--python_out={_stubs_dir}"] +
                       protos) != 0:
            raise RuntimeError("protoc failed to generate the OTLP stubs")
        sys.path.insert(0, _stubs_dir)
    from proto.otlp import logs_service_pb2  # noqa: generated above
    from proto.rpc import status_pb2  # noqa
    return logs_service_pb2, status_pb2


def node_env():
    """The environment a test runs the OpenTelemetry JS SDK's scripts in: NODE_PATH at the
    node_modules ./dev test installs (SHIPPER_NODE_MODULES)."""
    node_modules = os.environ.get("SHIPPER_NODE_MODULES", "")
    if not os.path.isdir(node_modules):
        raise AssertionError(f"SHIPPER_NODE_MODULES={node_modules!r} is not a directory: run the "
                             "tests with ./dev test, which installs the OpenTelemetry JS SDK there")
    return dict(os.environ, NODE_PATH=node_modules)


class OtlpShipper(Shipper):
    """The real binary with the OTLP input on, its transports (both, or HTTP alone) on ports the
    kernel picks, and the file output into `out` (one file: no rotation within a test)."""

    def __init__(self, tmp, out, *args, grpc_on=True):
        super().__init__(tmp, "-E", "shipper.otlp.enabled=true",
                         "-E", f"shipper.otlp.grpc.enabled={str(grpc_on).lower()}",
                         "-E", "shipper.otlp.grpc.server=127.0.0.1:0",
                         "-E", "shipper.otlp.http.server=127.0.0.1:0",
                         "-E", f"shipper.output.file.path={out}",
                         "-E", "shipper.output.file.rotate_every_kb=10485760", *args)
        self.out = out
        self.grpc_address = None
        deadline = time.time() + 30
        while time.time() < deadline:
            text = self.text()
            grpc_m, http_m = GRPC_LISTENING.search(text), HTTP_LISTENING.search(text)
            if http_m and (grpc_m or not grpc_on):
                self.http_address = http_m.group(1)
                self.grpc_address = grpc_m and grpc_m.group(1)
                return
            if self.proc.poll() is not None:
                raise RuntimeError("shipper exited:\n" + text)
            time.sleep(0.02)
        raise RuntimeError("no OTLP listeners logged:\n" + self.text())

    def http(self):
        host, port = self.http_address.rsplit(":", 1)
        return http.client.HTTPConnection(host, int(port), timeout=30)

    def export_grpc(self, request_bytes, timeout=30, method=EXPORT):
        """Calls Export (LogsService's, or `method`) with raw bytes; returns the reply's bytes,
        or raises grpc.RpcError."""
        with grpc.insecure_channel(self.grpc_address) as channel:
            call = channel.unary_unary(method, request_serializer=None,
                                       response_deserializer=None)
            return call(request_bytes, timeout=timeout)

    def documents(self):
        """Every document the file output wrote so far."""
        docs = []
        for path in sorted(glob.glob(os.path.join(self.out, "shipper.ndjson*"))):
            with open(path) as f:
                docs.extend(json.loads(line) for line in f if line.endswith("\n"))
        return docs


def relay_shipper(endpoint, *args, protocol="grpc"):
    """A relaying Shipper: what its OTLP input takes, its OTLP output sends on to `endpoint`
    (over `protocol`); its file output off, in a temporary directory of its own."""
    d = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    return OtlpShipper(d, os.path.join(d, "unused"), "-E", "shipper.output.file.enabled=false",
                       "-E", "shipper.output.otlp.enabled=true",
                       "-E", f"shipper.output.otlp.protocol={protocol}",
                       "-E", f"shipper.output.otlp.endpoint={endpoint}", *args)


def post(connection, body, content_type="application/x-protobuf", headers=None, path="/v1/logs",
         method="POST"):
    """One request on `connection`; returns (status, headers dict, body bytes)."""
    h = {"Content-Type": content_type}
    h.update(headers or {})
    connection.request(method, path, body=body, headers=h)
    r = connection.getresponse()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()


def wait_for(condition, timeout, what):
    """Polls `condition` until it returns something true, for up to `timeout` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
