#!/usr/bin/python3
"""A fake Elasticsearch for tests: no Elasticsearch package exists for this machine.

It follows the documented `_bulk` API (https://www.elastic.co/guide/en/elasticsearch/reference/
current/docs-bulk.html) as far as Shipper's output uses it, and checks what a real cluster
checks: NDJSON bodies (Content-Type application/x-ndjson) ending with a newline, action lines
`create` or `index` with `_index` (and `_id`, `pipeline`), gzip bodies (Content-Encoding: gzip),
basic and API-key authentication (401 otherwise), `filter_path` answers ({"errors": ..., "items":
[{"create": {"status": 201}}, ...]}), 409 when `create` meets an `_id` that exists, and `GET /`
with the cluster's name and version. It keeps every document it indexed, per index, in memory.

Faults on demand, set by a test through the methods below or, for a fake run as a script, by
POST /_fake/faults with the same names as JSON (GET /_fake/stats answers what it saw, GET
/_fake/values?field=NAME the value of NAME in every document it holds, one per copy):
  request_faults  a list consumed one per bulk request: 429, 503 or 413 (the whole request
                  answered so), or "close" (the connection closed without an answer)
  max_bytes       bulk bodies (inflated) larger than this are answered 413, as
                  http.max_content_length does
  delay           seconds to wait before answering each request
  stalled         requests are held unanswered until released, then their connection closed
Per-item faults come from the document itself, so a test knows which event meets which: a
document whose `fault` field is "reject" is answered 400 mapper_parsing_exception every time,
"retry" 429 es_rejected_execution_exception the first time it is seen, "conflict" 409 the first
time (and indexed, as if an earlier attempt had written it).

As a script: fake_elasticsearch.py [--port N] [--only-count] prints "listening on
127.0.0.1:PORT" and serves until killed; --only-count splits the NDJSON and answers every item
created, storing nothing (for benchmarks).
"""
import argparse
import base64
import gzip
import json
import socket
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeElasticsearch:
    def __init__(self, version="8.11.0", basic=None, api_key=None, tls=None, only_count=False,
                 port=0):
        """basic: (user, password) or api_key: "id:key" to require them; tls: (cert, key)."""
        self.version = version
        self.basic, self.api_key = basic, api_key
        self.only_count = only_count
        self.lock = threading.Lock()
        self.indices = {}    # index -> [document]
        self.ids = set()     # (index, _id) indexed
        self.seen = set()    # fault keys met once ("retry", "conflict")
        self.request_faults = []
        self.max_bytes = None
        self.delay = 0
        self.released = threading.Event()
        self.released.set()
        self.stats = {"bulk": 0, "items": 0, "statuses": {}, "item_statuses": {}, "stalled": 0,
                      "unauthorized": 0, "gzip": 0, "pipelines": {}, "bytes": 0,
                      "most_in_flight": 0}
        self.in_flight = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self.server.daemon_threads = True
        self.server.fake = self
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, scheme="http"):
        return f"{scheme}://127.0.0.1:{self.port}"

    def stop(self):
        self.released.set()
        self.server.shutdown()
        self.server.server_close()

    # Faults.
    def fail_requests(self, *faults):
        with self.lock:
            self.request_faults.extend(faults)

    def stall(self):
        self.released.clear()

    def release(self):
        self.released.set()

    def set(self, **settings):
        """max_bytes, delay, basic, api_key, version: as the constructor and the list above."""
        with self.lock:
            for name, value in settings.items():
                setattr(self, name, value)

    # What it holds.
    def documents(self):
        with self.lock:
            return {index: list(docs) for index, docs in self.indices.items()}

    def stat(self, name):
        with self.lock:
            return json.loads(json.dumps(self.stats[name]))

    def _count(self, name, key):
        counts = self.stats[name]
        counts[str(key)] = counts.get(str(key), 0) + 1

    def authorized(self, header):
        if self.basic is None and self.api_key is None:
            return True
        if self.basic is not None:
            expected = "Basic " + base64.b64encode(":".join(self.basic).encode()).decode()
        else:
            expected = "ApiKey " + base64.b64encode(self.api_key.encode()).decode()
        return header == expected

    def bulk(self, body):
        """The answer to a bulk body: (status, JSON object)."""
        if not body.endswith(b"\n"):
            return 400, _error("illegal_argument_exception",
                               "The bulk request must be terminated by a newline [\\n]")
        lines = body.split(b"\n")[:-1]
        if self.only_count:
            with self.lock:
                self.stats["items"] += len(lines) // 2
            return 200, {"errors": False,
                         "items": [{"create": {"status": 201}}] * (len(lines) // 2)}
        if len(lines) % 2:
            return 400, _error("illegal_argument_exception", "action line without its document")
        items, errors = [], False
        with self.lock:
            for k in range(0, len(lines), 2):
                action = json.loads(lines[k])
                (op, meta), = action.items()
                doc = json.loads(lines[k + 1])
                status, error = self._item(op, meta, doc)
                self.stats["items"] += 1
                self._count("item_statuses", status)
                if "pipeline" in meta:
                    self._count("pipelines", meta["pipeline"])
                result = {"status": status}
                if error:
                    result["error"] = error
                    errors = True
                items.append({op: result})
        return 200, {"errors": errors, "items": items}

    def _item(self, op, meta, doc):
        """REQUIRES: self.lock held."""
        if op not in ("create", "index") or "_index" not in meta:
            return 400, {"type": "action_request_validation_exception",
                         "reason": "Validation Failed: 1: index is missing;"}
        index = meta["_index"]
        fault = doc.get("fault")
        key = (fault, index, doc.get("seq"))
        if fault == "reject":
            return 400, {"type": "mapper_parsing_exception",
                         "reason": "failed to parse field [fault] of type [long]"}
        if fault == "retry" and key not in self.seen:
            self.seen.add(key)
            return 429, {"type": "es_rejected_execution_exception",
                         "reason": "rejected execution of coordinating operation"}
        if "_id" in meta and op == "create" and (index, meta["_id"]) in self.ids:
            return 409, {"type": "version_conflict_engine_exception",
                         "reason": f"[{meta['_id']}]: version conflict, document already exists"}
        self.indices.setdefault(index, []).append(doc)
        if "_id" in meta:
            self.ids.add((index, meta["_id"]))
        if fault == "conflict" and key not in self.seen:
            self.seen.add(key)
            return 409, {"type": "version_conflict_engine_exception",
                         "reason": "version conflict, document already exists"}
        return 201, None


def _error(kind, reason, status=None):
    error = {"error": {"root_cause": [{"type": kind, "reason": reason}], "type": kind,
                       "reason": reason}}
    if status:
        error["status"] = status
    return error


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Elasticsearch

    def setup(self):
        super().setup()
        # The headers and the body go out in two writes: without this, Nagle holds the body
        # until the client's delayed ACK (40 ms a request). Elasticsearch sets it too.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def answer(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        fake = self.server.fake
        if self.path == "/_fake/stats":
            with fake.lock:
                stats = dict(fake.stats, indices={i: len(d) for i, d in fake.indices.items()})
            return self.answer(200, stats)
        if self.path.startswith("/_fake/values?field="):
            field = self.path.split("=", 1)[1]
            with fake.lock:
                values = [d.get(field) for docs in fake.indices.values() for d in docs]
            return self.answer(200, values)
        if not fake.authorized(self.headers.get("Authorization")):
            return self.unauthorized()
        self.answer(200, {"name": "fake-node", "cluster_name": "fake-cluster",
                          "version": {"number": fake.version}, "tagline": "You Know, for Search"})

    def unauthorized(self):
        with self.server.fake.lock:
            self.server.fake.stats["unauthorized"] += 1
        self.answer(401, _error("security_exception", "unable to authenticate user", 401))

    def do_POST(self):
        fake = self.server.fake
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/_fake/faults":
            settings = json.loads(body)
            fake.fail_requests(*settings.pop("request_faults", []))
            stalled = settings.pop("stalled", None)
            if stalled is not None:
                fake.stall() if stalled else fake.release()
            fake.set(**settings)
            return self.answer(200, {"acknowledged": True})
        if not self.path.split("?")[0].endswith("/_bulk"):
            return self.answer(404, _error("no_handler_found_exception", self.path))
        if not fake.released.is_set():
            with fake.lock:
                fake.stats["stalled"] += 1
            fake.released.wait()
            self.close_connection = True
            return
        with fake.lock:
            fake.stats["bulk"] += 1
            fake.stats["bytes"] += len(body)  # as on the wire
            fault = fake.request_faults.pop(0) if fake.request_faults else None
            delay, max_bytes = fake.delay, fake.max_bytes
            fake.in_flight += 1
            fake.stats["most_in_flight"] = max(fake.stats["most_in_flight"], fake.in_flight)
        try:
            self.bulk_request(body, fault, delay, max_bytes)
        finally:
            with fake.lock:
                fake.in_flight -= 1

    def bulk_request(self, body, fault, delay, max_bytes):
        fake = self.server.fake
        if delay:
            threading.Event().wait(delay)
        if fault == "close":
            self.close_connection = True
            return
        if not fake.authorized(self.headers.get("Authorization")):
            return self.unauthorized()
        if self.headers.get("Content-Type") != "application/x-ndjson":
            return self.answer(406, _error("media_type_header_exception", "not x-ndjson"))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
            with fake.lock:
                fake.stats["gzip"] += 1
        if fault in (429, 503) or (fault == 413 or (max_bytes and len(body) > max_bytes)):
            status = fault if fault else 413
            with fake.lock:
                fake._count("statuses", status)
            return self.answer(status, _error("fault", f"injected {status}", status))
        status, obj = fake.bulk(body)
        with fake.lock:
            fake._count("statuses", status)
        self.answer(status, obj)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0: the kernel picks")
    parser.add_argument("--only-count", action="store_true")
    args = parser.parse_args()
    fake = FakeElasticsearch(only_count=args.only_count, port=args.port)
    print(f"listening on 127.0.0.1:{fake.port}", flush=True)
    fake.thread.join()


if __name__ == "__main__":
    sys.exit(main())
