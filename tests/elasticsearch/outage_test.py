#!/usr/bin/python3
"""Elasticsearch stops answering mid-stream, or answers only slowly: the persisted index does not
move past what it confirmed until it answers again, and then every event arrives. A cluster
older than 7 is refused as a failing host, saying why."""
import collections
import unittest

from es_testing import Publisher, event, start_shipper, tmpdir, wait_for
from fake_elasticsearch import FakeElasticsearch


class OutageTest(unittest.TestCase):
    def run_outage(self, stop, resume, *args):
        d = tmpdir()
        fake = FakeElasticsearch()
        shipper = start_shipper(d, fake.url(), "-E", "shipper.output.elasticsearch.timeout=1s",
                                *args)
        publisher = Publisher(shipper)
        try:
            msg = publisher.msg
            publisher.publish([event(msg, seq) for seq in range(1000)])
            first = publisher.last_index
            publisher.await_all()

            stop(fake)
            publisher.publish([event(msg, seq) for seq in range(1000, 3000)])
            # The output has tried and failed at least twice (a first attempt, then a retry).
            wait_for(lambda: shipper.text().count("output failed, retrying") >= 2,
                     "two failed attempts")
            self.assertEqual(publisher.persisted(), first, "moved while nothing was written")
            resume(fake)
            publisher.await_all()
        finally:
            publisher.close()
            code = shipper.stop()
            fake.stop()
        self.assertEqual(code, 0, shipper.text())
        seqs = collections.Counter(doc["seq"] for docs in fake.documents().values()
                                   for doc in docs)
        self.assertEqual(set(seqs), set(range(3000)))
        return seqs, shipper.text()

    def test_requests_held_unanswered(self):
        seqs, log = self.run_outage(FakeElasticsearch.stall, FakeElasticsearch.release)
        self.assertEqual(max(seqs.values()), 1, "a held request was never indexed, so none twice")
        self.assertIn("timed out", log)

    def test_connections_closed_unanswered(self):
        self.run_outage(lambda fake: fake.fail_requests(*["close"] * 1000),
                        lambda fake: fake.set(request_faults=[]))

    def test_whole_requests_answered_503_then_429(self):
        seqs, log = self.run_outage(lambda fake: fake.fail_requests(*[503, 429] * 1000),
                                    lambda fake: fake.set(request_faults=[]))
        self.assertEqual(max(seqs.values()), 1)
        self.assertIn("POST /_bulk answered 503", log)
        self.assertIn("POST /_bulk answered 429", log)

    def test_slow_answers_within_the_timeout_are_waited_for(self):
        d = tmpdir()
        fake = FakeElasticsearch()
        fake.set(delay=0.3)
        shipper = start_shipper(d, fake.url(), "-E", "shipper.output.elasticsearch.timeout=30s",
                                "-E", "shipper.output.elasticsearch.bulk_max_size=100")
        publisher = Publisher(shipper)
        try:
            publisher.deliver([event(publisher.msg, seq) for seq in range(1000)])
        finally:
            publisher.close()
            self.assertEqual(shipper.stop(), 0, shipper.text())
            fake.stop()
        self.assertNotIn("output failed", shipper.text())
        self.assertEqual(sum(len(d) for d in fake.documents().values()), 1000)

    def test_worker_bounds_the_requests_in_flight(self):
        """Two output workers write batches at once; `worker` requests reach the host at once."""
        for worker in (1, 2):
            with self.subTest(worker=worker):
                d = tmpdir()
                fake = FakeElasticsearch()
                fake.set(delay=0.2)
                shipper = start_shipper(d, fake.url(), "--cpus=2",
                                        "-E", "shipper.output.batch_max_events=100",
                                        "-E", f"shipper.output.elasticsearch.worker={worker}")
                publisher = Publisher(shipper)
                try:
                    publisher.deliver([event(publisher.msg, seq) for seq in range(2000)])
                finally:
                    publisher.close()
                    self.assertEqual(shipper.stop(), 0, shipper.text())
                    fake.stop()
                self.assertEqual(fake.stat("most_in_flight"), worker)

    def test_shutdown_cancels_a_request_in_flight(self):
        """The drain deadline passes while a request waits on a silent cluster (whose timeout is
        far away): Cancel() aborts it and the shipper exits, the events not persisted."""
        d = tmpdir()
        fake = FakeElasticsearch()
        fake.stall()
        shipper = start_shipper(d, fake.url(), "-E", "shipper.shutdown_timeout=1s")
        publisher = Publisher(shipper)
        try:
            publisher.publish([event(publisher.msg, seq) for seq in range(10)])
            wait_for(lambda: fake.stat("stalled") >= 1, "a request held")
            self.assertEqual(publisher.persisted(), 0)
        finally:
            publisher.close()
            code = shipper.stop()  # waits 30 s at most; the request's timeout is 90 s
            fake.stop()
        self.assertEqual(code, 0, shipper.text())
        self.assertIn("cancelled at shutdown", shipper.text())
        self.assertEqual(fake.documents(), {})

    def test_a_dead_host_is_skipped_for_the_live_one(self):
        d = tmpdir()
        good, dead = FakeElasticsearch(), FakeElasticsearch()
        dead.stop()  # its port now refuses connections
        shipper = start_shipper(d, f"{dead.url()},{good.url()}",
                                "-E", "shipper.output.elasticsearch.bulk_max_size=50")
        publisher = Publisher(shipper)
        try:
            publisher.deliver([event(publisher.msg, seq) for seq in range(1000)])
        finally:
            publisher.close()
            self.assertEqual(shipper.stop(), 0, shipper.text())
            good.stop()
        self.assertEqual(sum(len(docs) for docs in good.documents().values()), 1000)
        self.assertIn(f"elasticsearch {dead.url()}: GET /: ", shipper.text())
        # 1,000 events in requests of 50: the dead host, backing off, got few of them.
        self.assertLess(shipper.text().count(f"elasticsearch {dead.url()}:"), 20)

    def test_cluster_older_than_7_is_refused(self):
        d = tmpdir()
        fake = FakeElasticsearch(version="6.8.23")
        shipper = start_shipper(d, fake.url())
        publisher = Publisher(shipper)
        try:
            publisher.publish([event(publisher.msg, seq) for seq in range(10)])
            wait_for(lambda: "runs version 6.8.23; this output needs 7 or later" in shipper.text(),
                     "the refusal")
            self.assertEqual(publisher.persisted(), 0)
            self.assertEqual(fake.stat("bulk"), 0, "no bulk request to a cluster it refused")
            fake.set(version="7.17.0")  # upgraded: the next check passes
            publisher.await_all()
        finally:
            publisher.close()
            shipper.stop()
            fake.stop()


if __name__ == "__main__":
    unittest.main()
