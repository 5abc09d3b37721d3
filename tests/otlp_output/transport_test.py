#!/usr/bin/python3
"""The OTLP output's transports against the fake receiver, over OTLP/gRPC and OTLP/HTTP: TLS
with mTLS (a client certificate the receiver requires), the configured headers on every request,
gzip, and requests split to stay within max_request_bytes; a client the receiver does not trust
gets nothing persisted."""
import os
import sys

sys.path.insert(0, "tests/elasticsearch")
sys.path.insert(0, "tests/otlp_output")
from es_testing import Publisher, metrics, tmpdir, wait_for  # noqa: E402
from fake_otlp_receiver import FakeOtlpReceiver  # noqa: E402
from harness import Shipper  # noqa: E402
from tls_test import Pki  # noqa: E402  (tests/hardening, on the path through es_testing)


def start(d, fake, protocol, pki, client, *args):
    endpoint = fake.address if protocol == "grpc" else f"https://{fake.address}"
    return Shipper(d, "-E", "shipper.output.otlp.enabled=true",
                   "-E", f"shipper.output.otlp.endpoint={endpoint}",
                   "-E", f"shipper.output.otlp.protocol={protocol}",
                   "-E", "shipper.output.otlp.ssl.enabled=true",
                   "-E", f"shipper.output.otlp.ssl.certificate_authorities={pki.path('ca.crt')}",
                   "-E", f"shipper.output.otlp.ssl.certificate={pki.path(client + '.crt')}",
                   "-E", f"shipper.output.otlp.ssl.key={pki.path(client + '.key')}",
                   "-E", "shipper.output.otlp.headers=['Authorization: Bearer s3cret']",
                   "-E", "shipper.output.backoff.init=20ms",
                   "-E", "shipper.output.backoff.max=200ms", *args)


def events(msg, first, n, size):
    out = []
    for seq in range(first, first + n):
        e = msg.Event()
        e.timestamp.seconds = 1700000000 + seq
        e.fields.data["seq"].int64_value = seq
        e.fields.data["message"].string_value = f"event {seq} " + "x" * size
        out.append(e)
    return out


def check(protocol, pki):
    fake = FakeOtlpReceiver("grpc" if protocol == "grpc" else "http",
                            tls=(pki.path("server.crt"), pki.path("server.key")),
                            client_ca=pki.path("ca.crt"))
    d = tmpdir()
    shipper = start(d, fake, protocol, pki, "client",
                    "-E", "shipper.output.otlp.max_request_bytes=2048")
    publisher = Publisher(shipper)
    publisher.deliver(events(publisher.msg, 0, 60, 200), timeout=60)
    assert set(fake.seqs()) == set(range(60)), sorted(fake.seqs())
    sizes = [r["bytes"] for r in fake.requests]
    assert max(sizes) <= 2048 and len(sizes) >= 6, sizes
    for r in fake.requests:
        headers = {k.lower(): v for k, v in r["headers"].items()}
        assert headers.get("authorization") == "Bearer s3cret", headers
        if protocol != "grpc":
            assert headers.get("content-encoding") == "gzip", headers
    assert shipper.stop() == 0

    # A client certificate of another CA: the receiver refuses the handshake, nothing persists.
    d = tmpdir()
    stranger = start(d, fake, protocol, pki, "other_client")
    publisher = Publisher(stranger)
    publisher.publish(events(publisher.msg, 100, 3, 10))
    wait_for(lambda: any(k.startswith('shipper_output_errors_total{output="otlp"') and v > 0
                         for k, v in metrics(stranger).items()), "a failed export")
    assert publisher.persisted() < publisher.last_index
    assert not set(fake.seqs()) & {100, 101, 102}
    stranger.proc.kill()
    stranger.proc.wait()
    fake.stop()
    print(f"{protocol}: mTLS, headers and max_request_bytes hold")


def main():
    pki = Pki(tmpdir())
    for protocol in ("grpc", "http/protobuf"):
        check(protocol, pki)


if __name__ == "__main__":
    main()
