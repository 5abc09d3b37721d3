#!/usr/bin/python3
"""The OTLP output against a fake receiver that fails on demand (fake_otlp_receiver.py), over
OTLP/gRPC, OTLP/HTTP protobuf and OTLP/HTTP JSON: each fault gets the verdict the output's header
gives it, and the persisted index never runs ahead of what the receiver accepted."""
import os
import sys
import time

sys.path.insert(0, "tests/elasticsearch")
sys.path.insert(0, "tests/otlp_output")
from es_testing import Publisher, dead_letters, metrics, tmpdir, wait_for  # noqa: E402
from fake_otlp_receiver import FakeOtlpReceiver  # noqa: E402
from harness import Shipper  # noqa: E402  (es_testing put tests/hardening on the path)


def start(d, fake, protocol, *args):
    endpoint = fake.address if protocol == "grpc" else f"http://{fake.address}"
    return Shipper(d, "-E", "shipper.output.otlp.enabled=true",
                   "-E", f"shipper.output.otlp.endpoint={endpoint}",
                   "-E", f"shipper.output.otlp.protocol={protocol}",
                   "-E", "shipper.output.otlp.timeout=1s",
                   "-E", "shipper.output.backoff.init=20ms",
                   "-E", "shipper.output.backoff.max=200ms",
                   "-E", f"shipper.dead_letter.path={os.path.join(d, 'dead.ndjson')}",
                   *args)


class Run:
    """One shipper and one fake, events numbered across the checks."""

    def __init__(self, protocol):
        self.protocol = protocol
        self.fake = FakeOtlpReceiver("grpc" if protocol == "grpc" else "http")
        self.d = tmpdir()
        self.shipper = start(self.d, self.fake, protocol)
        self.publisher = Publisher(self.shipper)
        self.msg = self.publisher.msg
        self.next_seq = 0

    def events(self, n, reject=(), size=0):
        events = []
        for _ in range(n):
            e = self.msg.Event()
            e.timestamp.seconds = 1700000000 + self.next_seq
            e.fields.data["seq"].int64_value = self.next_seq
            e.fields.data["message"].string_value = f"event {self.next_seq} " + "x" * size
            if self.next_seq in reject:
                e.fields.data["fault"].string_value = "reject"
            events.append(e)
            self.next_seq += 1
        return events

    def deliver(self, events):
        self.publisher.deliver(events, timeout=60)
        return [int(e.fields.data["seq"].int64_value) for e in events]

    def received(self):
        return set(self.fake.seqs())

    def dead(self):
        return {int(d["event"]["seq"]): d["reason"] for d in dead_letters(self.d)}

    def counter(self, name):
        return sum(v for k, v in metrics(self.shipper).items() if k.startswith(name))


def check_retried(run, fault):
    """A fault that is failed for now: retried until the receiver takes every record."""
    errors = run.counter('shipper_output_errors_total{output="otlp"')
    run.fake.faults = [fault, fault]
    seqs = run.deliver(run.events(10))
    assert set(seqs) <= run.received(), (fault, run.fake.answers()[-5:])
    assert not set(seqs) & set(run.dead()), fault
    # libcurl resends once, by itself, a request whose reused connection was cut.
    least = 1 if fault == "close" else 2
    assert run.counter('shipper_output_errors_total{output="otlp"') >= errors + least, fault
    if "+retry" in fault:
        assert "the receiver asked to retry after 1s" in run.shipper.text(), fault


def check_split(run, fault):
    """Too large: sent again in halves, every record taken, nothing dead."""
    before = len(run.fake.requests)
    run.fake.faults = [fault]
    seqs = run.deliver(run.events(8))
    assert set(seqs) <= run.received(), fault
    assert not set(seqs) & set(run.dead()), fault
    sizes = [r["records"] for r in run.fake.requests[before:]]
    assert sizes[:3] == [8, 4, 4], (fault, sizes)


def check_record_too_large(run):
    """The receiver's limit: a record alone above it is a dead letter with the receiver's
    message; the others of its batch are taken."""
    run.fake.max_bytes = 4000
    events = run.events(6) + run.events(1, size=10000) + run.events(6)
    seqs = run.deliver(events)
    run.fake.max_bytes = None
    big = seqs[6]
    dead = run.dead()
    assert big in dead and "larger than 4000" in dead[big], dead
    assert set(seqs) - {big} <= run.received()
    assert big not in run.received()


def check_refused_record(run):
    """A record the receiver refuses for what it holds is a dead letter with its message; the
    others sent with it are taken (halving finds it)."""
    first = run.next_seq
    seqs = run.deliver(run.events(16, reject={first + 5}))
    dead = run.dead()
    assert f"record seq {first + 5} is invalid" in dead.get(first + 5, ""), dead
    assert set(seqs) - {first + 5} <= run.received()
    assert not (set(seqs) - {first + 5}) & set(dead)


def check_refused(run, fault):
    """Refused for good (not for its contents): the request's records are dead letters."""
    run.fake.faults = [fault]
    seqs = run.deliver(run.events(3))
    dead = run.dead()
    assert set(seqs) <= set(dead), (fault, dead)
    assert f"fault {fault}" in dead[seqs[0]], dead[seqs[0]]


def check_partial(run):
    """partial_success: written, counted, its message logged once."""
    counted = run.counter('shipper_output_items_total{output="otlp",outcome="rejected_by_receiver"')
    run.fake.faults = ["partial"]
    seqs = run.deliver(run.events(3))
    run.fake.faults = ["partial"]
    seqs += run.deliver(run.events(3))
    assert set(seqs) <= run.received()
    assert run.counter(
        'shipper_output_items_total{output="otlp",outcome="rejected_by_receiver"') == counted + 2
    assert run.shipper.text().count("1 record too old") == 1, run.shipper.text()


def check_stall(run):
    """A receiver that answers after the timeout: failed for now, taken on a later try."""
    run.fake.faults = ["stall"]
    run.fake.stall = 2
    seqs = run.deliver(run.events(3))
    assert set(seqs) <= run.received()
    assert not set(seqs) & set(run.dead())


def check_restart(run):
    """The receiver killed, events published meanwhile, the receiver back on its port: all of
    them arrive, and none is persisted while it is down."""
    run.fake.stop()
    errors = run.counter('shipper_output_errors_total{output="otlp"')
    seqs = [int(e.fields.data["seq"].int64_value) for e in run.events(5)]
    run.next_seq -= 5
    run.publisher.publish(run.events(5))
    wait_for(lambda: run.counter('shipper_output_errors_total{output="otlp"') > errors,
             "a failed export")
    assert run.publisher.persisted() < run.publisher.last_index
    run.fake.start()
    run.publisher.await_all(60)
    assert set(seqs) <= run.received()


def main():
    for protocol in ("grpc", "http/protobuf", "http/json"):
        run = Run(protocol)
        grpc_on = protocol == "grpc"
        for fault in (["UNAVAILABLE", "UNAVAILABLE+retry", "RESOURCE_EXHAUSTED+retry",
                       "DEADLINE_EXCEEDED", "ABORTED"] if grpc_on else
                      ["503", "503+retry", "429+retry", "502", "504", "close"]):
            check_retried(run, fault)
        check_split(run, "RESOURCE_EXHAUSTED" if grpc_on else "413")
        check_record_too_large(run)
        check_refused_record(run)
        for fault in (["UNAUTHENTICATED", "PERMISSION_DENIED"] if grpc_on else ["401", "404"]):
            check_refused(run, fault)
        check_partial(run)
        check_stall(run)
        check_restart(run)
        assert run.shipper.stop() == 0
        run.fake.stop()
        print(f"{protocol}: every fault got its verdict")


if __name__ == "__main__":
    main()
