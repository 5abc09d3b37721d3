#!/usr/bin/python3
"""100,000 events through the real shipper into the fake Elasticsearch, with faults of every
kind mixed in: whole requests answered 429, 503 and 413 or closed unanswered, bodies over the
fake's size limit, per-item 429, 409 and 400. Every good event ends up indexed exactly once in
the data stream its data_stream fields name, each refused one is in the dead-letter file with
Elasticsearch's error, and the persisted index covers them all."""
import collections
import unittest

from es_testing import Publisher, data_stream, dead_letters, event, metrics, start_shipper, tmpdir
from fake_elasticsearch import FakeElasticsearch

EVENTS = 100_000


def fault_of(seq):
    if seq % 97 == 5:
        return "reject"
    if seq % 89 == 7:
        return "retry"
    if seq % 101 == 11:
        return "conflict"
    return None


class BulkTest(unittest.TestCase):
    def test_mixed_faults_index_every_good_event_once(self):
        d = tmpdir()
        fake = FakeElasticsearch()
        # Requests over 400 KB (about 1,900 of these events) are too large: the output splits.
        fake.set(max_bytes=400_000)
        fake.fail_requests(429, 503, "close", 413, 429, "close", 503)
        shipper = start_shipper(d, fake.url(), "-E", "shipper.output.batch_max_events=4000",
                                "-E", "shipper.output.elasticsearch.bulk_max_size=2500",
                                "-E", "shipper.queue.mem.events=65536")
        publisher = Publisher(shipper)
        try:
            events = [event(publisher.msg, seq, fault_of(seq)) for seq in range(EVENTS)]
            publisher.deliver(events, timeout=240)
            page = metrics(shipper)
        finally:
            publisher.close()
            code = shipper.stop()
            fake.stop()
        self.assertEqual(code, 0, shipper.text())

        rejected = {s for s in range(EVENTS) if fault_of(s) == "reject"}
        seen = collections.Counter()
        for index, docs in fake.documents().items():
            for doc in docs:
                seq = doc["seq"]
                seen[seq] += 1
                self.assertEqual(index, data_stream(seq), doc)
                self.assertNotIn("@metadata", doc)
        twice = [s for s, n in seen.items() if n > 1]
        self.assertEqual(twice, [], "indexed more than once")
        missing = sorted(set(range(EVENTS)) - rejected - set(seen))
        self.assertEqual(missing, [], "never indexed")
        self.assertEqual(set(seen) & rejected, set())

        letters = dead_letters(d)
        self.assertEqual(sorted(l["event"]["seq"] for l in letters), sorted(rejected))
        for letter in letters:
            self.assertIn("400 mapper_parsing_exception failed to parse field", letter["reason"])

        statuses = fake.stat("statuses")
        items = fake.stat("item_statuses")
        self.assertGreater(statuses.get("413", 0), 1, statuses)  # injected, and over max_bytes
        self.assertGreater(statuses.get("429", 0), 0, statuses)
        self.assertGreater(statuses.get("503", 0), 0, statuses)
        self.assertEqual(items.get("429"), sum(fault_of(s) == "retry" for s in range(EVENTS)))
        self.assertEqual(items.get("409"), sum(fault_of(s) == "conflict" for s in range(EVENTS)))
        self.assertGreater(fake.stat("gzip"), 0)

        def items(outcome):
            return page[f'shipper_output_items_total{{output="elasticsearch",outcome="{outcome}"}}']
        conflicts = sum(fault_of(s) == "conflict" for s in range(EVENTS))
        self.assertEqual(items("created"), EVENTS - len(rejected) - conflicts)
        self.assertEqual(items("duplicate"), conflicts)
        self.assertEqual(items("retried"), sum(fault_of(s) == "retry" for s in range(EVENTS)))
        self.assertEqual(items("dead_lettered"), len(rejected))
        requests = 'shipper_output_requests_total{output="elasticsearch",status="%s"}'
        self.assertEqual(page[requests % 413], statuses["413"])
        self.assertGreater(page[requests % 200], 0)
        log = shipper.text()
        self.assertIn("elasticsearch http://127.0.0.1:", log)
        self.assertIn("cluster fake-cluster, version 8.11.0", log)

    def test_index_pipeline_and_metadata_id_and_op_type(self):
        """The index and pipeline formats, and _id/op_type/pipeline from the event's metadata:
        a resent create with the same _id is a 409 the output counts as written."""
        d = tmpdir()
        fake = FakeElasticsearch()
        shipper = start_shipper(d, fake.url() + "/",
                                "-E", "shipper.output.elasticsearch.index=Events-%{[tenant]:none}",
                                "-E", "shipper.output.elasticsearch.pipeline=p-%{[tenant]:x}",
                                "-E", "shipper.output.elasticsearch.compression_level=0")
        publisher = Publisher(shipper)
        msg = publisher.msg
        try:
            events = []
            for seq in range(6):
                e = event(msg, seq)
                if seq % 2:
                    e.fields.data["tenant"].string_value = "acme"
                if seq >= 2:  # 4 repeats 2's _id, 5 repeats 3's
                    e.metadata.data["_id"].string_value = "odd" if seq % 2 else "even"
                if seq == 5:
                    e.metadata.data["op_type"].string_value = "index"
                    e.metadata.data["pipeline"].string_value = "from-metadata"
                events.append(e)
            publisher.deliver(events)
        finally:
            publisher.close()
            shipper.stop()
            fake.stop()
        docs = fake.documents()
        # 4's create met 2's _id (409: already there, done); 5's index overwrote 3's.
        self.assertEqual(sorted(docs), ["events-acme", "events-none"], "lowercased")
        self.assertEqual(sorted(doc["seq"] for doc in docs["events-none"]), [0, 2])
        self.assertEqual(sorted(doc["seq"] for doc in docs["events-acme"]), [1, 3, 5])
        self.assertEqual(fake.stat("item_statuses").get("409"), 1)
        self.assertEqual(fake.stat("gzip"), 0)
        self.assertEqual(fake.stat("pipelines"), {"p-x": 3, "p-acme": 2, "from-metadata": 1})
        self.assertEqual(dead_letters(d), [])


if __name__ == "__main__":
    unittest.main()
