#!/usr/bin/python3
"""gRPC server reflection on the real shipper, as grpcurl uses it: list the services, then fetch
the descriptor of the Producer service and find both of its methods. Spoken in raw bytes, since
Debian's grpcio comes without the reflection client."""
import os
import tempfile
import unittest

import grpc
from google.protobuf import descriptor_pb2

from harness import Shipper

REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"


def fields(data):
    """(field number, value) of every length-delimited field of a protobuf message; varints are
    skipped (reflection's replies hold none we need)."""
    i, out = 0, []

    def varint():
        nonlocal i
        shift = value = 0
        while True:
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value

    while i < len(data):
        key = varint()
        number, wire_type = key >> 3, key & 7
        if wire_type == 2:
            n = varint()
            out.append((number, data[i:i + n]))
            i += n
        elif wire_type == 0:
            varint()
        else:
            raise ValueError(f"unexpected wire type {wire_type}")
    return out


def one(data, number):
    values = [v for n, v in fields(data) if n == number]
    if len(values) != 1:
        raise AssertionError(f"expected one field {number}, got {len(values)} in {data!r}")
    return values[0]


class ReflectionTest(unittest.TestCase):
    def test_lists_and_describes_services(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        shipper = Shipper(tmp, "-E", "shipper.output.discard.enabled=true")
        try:
            with grpc.insecure_channel(shipper.address) as channel:
                info = channel.stream_stream(REFLECTION, request_serializer=None,
                                             response_deserializer=None)
                symbol = b"elastic.agent.shipper.v1.Producer"
                list_services = b"\x3a\x00"  # ServerReflectionRequest.list_services = ""
                file_containing_symbol = b"\x22" + bytes([len(symbol)]) + symbol
                replies = list(info(iter([list_services, file_containing_symbol]), timeout=10))
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text())

        self.assertEqual(len(replies), 2)
        listed = one(replies[0], 6)  # list_services_response
        names = {one(service, 1).decode() for _, service in fields(listed)}
        self.assertIn("elastic.agent.shipper.v1.Producer", names)
        self.assertIn("grpc.health.v1.Health", names)
        self.assertIn("grpc.reflection.v1alpha.ServerReflection", names)

        described = one(replies[1], 4)  # file_descriptor_response
        methods = set()
        for _, proto in fields(described):  # file_descriptor_proto, repeated
            fd = descriptor_pb2.FileDescriptorProto.FromString(proto)
            for service in fd.service:
                if f"{fd.package}.{service.name}" == symbol.decode():
                    methods |= {m.name for m in service.method}
        self.assertEqual(methods, {"PublishEvents", "PersistedIndex"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
