#!/usr/bin/python3
"""A fake OTLP logs receiver for the OTLP output's tests: it takes what the OTLP specification
(opentelemetry-proto docs/specification.md) says a receiver takes, answers as it says a receiver
answers, and fails on demand.

OTLP/gRPC: LogsService/Export (gzip as gRPC negotiates it); its errors carry a google.rpc.Status
with RetryInfo in grpc-status-details-bin when asked to throttle; requests above `max_bytes`
are refused RESOURCE_EXHAUSTED without RetryInfo, as grpc's own receive limit refuses them.
OTLP/HTTP: POST /v1/logs (or any path given) with Content-Type application/x-protobuf or
application/json (trace and span ids as hex, as the specification's JSON wants), optionally
Content-Encoding gzip; 200 with an ExportLogsServiceResponse in the request's encoding; errors
with a google.rpc.Status body; 413 above `max_bytes`; 415 for another Content-Type. Both: TLS and
mTLS (a client certificate required) when given files.

Faults, consumed one per request from `faults` (a list a test sets):
  "UNAVAILABLE", "RESOURCE_EXHAUSTED", "INVALID_ARGUMENT", ...  gRPC: that status code;
                  HTTP: its usual status (503, 429, 400 ...)
  a number        HTTP: that status; gRPC: the code the specification pairs with it
  "+retry"        appended: with RetryInfo (gRPC) / Retry-After (HTTP) of `retry_delay` seconds
  "partial"       accepted, with partial_success rejecting one record and an error_message
  "stall"         answered OK only after `stall` seconds (past the client's timeout)
  "close"         HTTP: the connection closed without an answer; gRPC: UNAVAILABLE
A record whose attribute `fault` is "reject" makes every request that holds it INVALID_ARGUMENT
/ 400, naming the record, as a receiver that validates records would.

It keeps every record it accepted (resource, scope, record) and what each request carried.

As a script (for tests in other languages): fake_otlp_receiver.py [--protocol grpc|http] prints
"receiving on 127.0.0.1:PORT" (OTLP) and "listening on 127.0.0.1:PORT" (its control endpoints,
as fake_elasticsearch.py's): POST /_fake/faults {"faults": [...], "stall": s, "retry_delay": s}
sets them; GET /_fake/values?field=NAME answers the int value of attribute NAME of every record
it holds, one per copy (null where a record has none)."""
import argparse
import gzip
import json
import socket
import ssl
import sys
import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc

sys.path.insert(0, "tests/otlp")
from otlp_harness import otlp  # noqa: E402  (stubs of proto/otlp)

EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
HTTP_OF = {"UNAVAILABLE": 503, "RESOURCE_EXHAUSTED": 429, "INVALID_ARGUMENT": 400,
           "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "NOT_FOUND": 404,
           "DEADLINE_EXCEEDED": 504, "INTERNAL": 500}
GRPC_OF = {503: "UNAVAILABLE", 502: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED", 429: "UNAVAILABLE",
           413: "RESOURCE_EXHAUSTED", 400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED",
           403: "PERMISSION_DENIED", 404: "UNIMPLEMENTED", 500: "INTERNAL"}


def attribute(kvs, key):
    for kv in kvs:
        if kv.key == key:
            return kv.value
    return None


class Refusal(Exception):
    """A request refused: gRPC status code (a name), HTTP status, message, RetryInfo seconds."""

    def __init__(self, code, http, message, retry=None):
        super().__init__(message)
        self.code, self.http, self.message, self.retry = code, http, message, retry


class FakeOtlpReceiver:
    def __init__(self, protocol="grpc", tls=None, client_ca=None, max_bytes=None, port=0):
        """protocol: grpc or http; tls: (cert, key) files; client_ca: require client certs."""
        self.pb, self.status_pb = otlp()
        self.protocol = protocol
        self.lock = threading.Lock()
        self.records = []    # (resource, scope, record) accepted
        self.requests = []   # {"bytes", "records", "headers", "answer"} per request seen
        self.faults = []
        self.retry_delay = 1
        self.stall = 3
        self.max_bytes = max_bytes
        self.tls, self.client_ca = tls, client_ca
        self.port = port
        self.connections = set()  # HTTP: open, for stop() to cut
        self.start()

    # --- what tests read

    def seqs(self):
        """The `seq` attribute of every accepted record, in order of arrival, copies included."""
        with self.lock:
            return [attribute(r.attributes, "seq").int_value for _, _, r in self.records]

    def answers(self):
        with self.lock:
            return [r["answer"] for r in self.requests]

    # --- serving

    def start(self):
        if self.protocol == "grpc":
            self._start_grpc()
        else:
            self._start_http()

    def stop(self):
        if self.protocol == "grpc":
            self.server.stop(0).wait()
        else:
            self.server.shutdown()
            self.server.server_close()
            # Killed, not drained: the keep-alive connections go too.
            with self.lock:
                connections, self.connections = self.connections, set()
            for connection in connections:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _export(self, body, headers):
        """Takes one serialized request; returns the serialized response or raises Refusal."""
        request = self.pb.ExportLogsServiceRequest()
        request.ParseFromString(body)
        records = [(rl.resource, sl.scope, r) for rl in request.resource_logs
                   for sl in rl.scope_logs for r in sl.log_records]
        entry = {"bytes": len(body), "records": len(records), "headers": dict(headers),
                 "answer": "OK", "groups": (len(request.resource_logs),
                                            sum(len(rl.scope_logs) for rl in request.resource_logs))}
        with self.lock:
            self.requests.append(entry)
            fault = self.faults.pop(0) if self.faults else None
        try:
            if self.max_bytes is not None and len(body) > self.max_bytes:
                raise Refusal("RESOURCE_EXHAUSTED", 413,
                              f"request of {len(body)} bytes is larger than {self.max_bytes}")
            for _, _, r in records:
                value = attribute(r.attributes, "fault")
                if value is not None and value.string_value == "reject":
                    seq = attribute(r.attributes, "seq").int_value
                    raise Refusal("INVALID_ARGUMENT", 400, f"record seq {seq} is invalid")
            response = self.pb.ExportLogsServiceResponse()
            if fault == "stall":
                time.sleep(self.stall)
            elif fault == "partial":
                response.partial_success.rejected_log_records = 1
                response.partial_success.error_message = "1 record too old"
            elif fault is not None:
                name, _, retry = fault.partition("+")
                if name.isdigit():
                    code, http = GRPC_OF[int(name)], int(name)
                else:
                    code, http = name, HTTP_OF.get(name, 500)
                raise Refusal(code, http, f"fault {fault}", self.retry_delay if retry else None)
        except Refusal as refusal:
            entry["answer"] = refusal.code if self.protocol == "grpc" else refusal.http
            raise
        with self.lock:
            self.records.extend(records)
        return response

    def _status(self, refusal, code_number):
        status = self.status_pb.Status(code=code_number, message=refusal.message)
        if refusal.retry is not None:
            info = self.status_pb.RetryInfo()
            info.retry_delay.seconds = int(refusal.retry)
            info.retry_delay.nanos = int((refusal.retry % 1) * 1e9)
            status.details.add().Pack(info)
        return status

    def _start_grpc(self):
        fake = self

        def export(body, context):
            try:
                return fake._export(body, context.invocation_metadata()).SerializeToString()
            except Refusal as refusal:
                code = getattr(grpc.StatusCode, refusal.code)
                status = fake._status(refusal, code.value[0])
                context.set_trailing_metadata(
                    (("grpc-status-details-bin", status.SerializeToString()),))
                context.abort(code, refusal.message)

        handler = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.logs.v1.LogsService",
            {"Export": grpc.unary_unary_rpc_method_handler(export)})
        options = [("grpc.max_receive_message_length", 64 << 20)]
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=options)
        self.server.add_generic_rpc_handlers((handler,))
        address = f"127.0.0.1:{self.port}"
        if self.tls:
            cert, key = (open(f, "rb").read() for f in self.tls)
            ca = open(self.client_ca, "rb").read() if self.client_ca else None
            credentials = grpc.ssl_server_credentials(
                [(key, cert)], root_certificates=ca, require_client_auth=ca is not None)
            self.port = self.server.add_secure_port(address, credentials)
        else:
            self.port = self.server.add_insecure_port(address)
        self.server.start()
        self.address = f"127.0.0.1:{self.port}"

    def _start_http(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                with fake.lock:
                    fake.connections.add(self.connection)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                content_type = self.headers.get("Content-Type", "")
                if content_type not in ("application/x-protobuf", "application/json"):
                    return self.answer(415, "text/plain", b"unsupported content type")
                is_json = content_type == "application/json"
                if fake.faults and fake.faults[0] == "close":
                    with fake.lock:
                        fake.faults.pop(0)
                        fake.requests.append({"bytes": len(body), "records": None,
                                              "headers": dict(self.headers), "answer": "close"})
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                try:
                    request = fake.from_json(body) if is_json else body
                    response = fake._export(request, self.headers.items())
                except Refusal as refusal:
                    error = fake._status(refusal, getattr(grpc.StatusCode, refusal.code).value[0])
                    headers = {"Retry-After": str(int(refusal.retry))} \
                        if refusal.retry is not None else {}
                    return self.answer(refusal.http, content_type, fake.encode(error, is_json),
                                       headers)
                self.answer(200, content_type, fake.encode(response, is_json))

            def answer(self, status, content_type, body, headers=None):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        if self.tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            if self.client_ca:
                context.verify_mode = ssl.CERT_REQUIRED
                context.load_verify_locations(self.client_ca)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.address = f"127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def from_json(self, body):
        """An OTLP/JSON request as protobuf bytes: ids are hex in OTLP/JSON, base64 in protobuf's
        own JSON mapping."""
        from google.protobuf import json_format
        import base64
        doc = json.loads(body)
        for rl in doc.get("resourceLogs", []):
            for sl in rl.get("scopeLogs", []):
                for r in sl.get("logRecords", []):
                    for key in ("traceId", "spanId"):
                        if key in r:
                            r[key] = base64.b64encode(bytes.fromhex(r[key])).decode()
        request = self.pb.ExportLogsServiceRequest()
        json_format.ParseDict(doc, request)
        return request.SerializeToString()

    @staticmethod
    def encode(message, is_json):
        if is_json:
            from google.protobuf import json_format
            return json_format.MessageToJson(message).encode()
        return message.SerializeToString()


def serve():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", choices=("grpc", "http"), default="grpc")
    fake = FakeOtlpReceiver(parser.parse_args().protocol)

    class Control(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            settings = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            with fake.lock:
                for name in ("faults", "stall", "retry_delay"):
                    if name in settings:
                        setattr(fake, name, settings[name])
            self.reply(b"{}")

        def do_GET(self):
            field = self.path.partition("/_fake/values?field=")[2]
            with fake.lock:
                values = [attribute(r.attributes, field) for _, _, r in fake.records]
            self.reply(json.dumps([v.int_value if v is not None else None
                                   for v in values]).encode())

        def reply(self, body):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    control = ThreadingHTTPServer(("127.0.0.1", 0), Control)
    print(f"receiving on {fake.address}", flush=True)
    print(f"listening on 127.0.0.1:{control.server_address[1]}", flush=True)
    control.serve_forever()


if __name__ == "__main__":
    serve()
