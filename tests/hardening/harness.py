"""What the hardening tests share: the shipper process and stubs of tests/python, raw calls by
method path, health and a bystander client that must stay unaffected by what the others do."""
import os
import sys
import tempfile
import threading

import grpc

sys.path.insert(0, "tests/python")
from wire_compat_test import Shipper, generate_stubs  # noqa: E402  (the same process wrapper)

PUBLISH = "/elastic.agent.shipper.v1.Producer/PublishEvents"
PERSISTED = "/elastic.agent.shipper.v1.Producer/PersistedIndex"
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
HEALTH_WATCH = "/grpc.health.v1.Health/Watch"
SERVING, NOT_SERVING = b"\x08\x01", b"\x08\x02"  # HealthCheckResponse{status: 1 or 2}

_stubs_dir = None


def messages():
    """The generated messages_pb2 module (stubs generated once per process)."""
    global _stubs_dir
    if _stubs_dir is None:
        _stubs_dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        generate_stubs(_stubs_dir)
    from proto import messages_pb2  # noqa: generated above
    return messages_pb2


def raw_unary(channel, method):
    """A unary call that sends and returns raw bytes, so tests can send what no stub would."""
    return channel.unary_unary(method, request_serializer=None, response_deserializer=None)


def health(channel):
    return raw_unary(channel, HEALTH_CHECK)(b"", timeout=10)


def small_request(uuid, n=3):
    msg = messages()
    req = msg.PublishRequest(uuid=uuid)
    for i in range(n):
        req.events.add().fields.data["message"].string_value = f"event {i}"
    return req.SerializeToString()


class Bystander:
    """Publishes small valid requests on its own connection until stopped; counts failures."""

    def __init__(self, address, uuid, channel_factory=grpc.insecure_channel):
        # A distinct channel argument keeps this connection apart from the test's own.
        self.channel = channel_factory(address, options=[("bystander", 1)])
        self.publish = raw_unary(self.channel, PUBLISH)
        self.request = small_request(uuid)
        self.ok, self.errors = 0, []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping.is_set():
            try:
                self.publish(self.request, timeout=10)
                self.ok += 1
            except grpc.RpcError as e:
                self.errors.append(f"{e.code()}: {e.details()}")
            self.stopping.wait(0.005)

    def stop(self):
        self.stopping.set()
        self.thread.join()
        self.channel.close()
