"""client_bench (08): ProducerPerformance's summary line and the side-by-side ratios."""

import pytest

from deliverylab.chapters.cost_of_guarantees import client_bench as cb
from deliverylab.errors import LabError

OUTPUT = """\
49981 records sent, 9994.2 records/sec (9.76 MB/sec), 12.3 ms avg latency, 250.0 ms max latency.
100000 records sent, 10523.412011 records/sec (10.28 MB/sec), 11.52 ms avg latency, \
312.00 ms max latency, 8 ms 50th, 27 ms 95th, 45 ms 99th, 210 ms 99.9th.
"""


def test_the_final_summary_line_is_parsed_not_the_window_lines():
    got = cb.parse_total(OUTPUT)
    assert got["records"] == 100000 and got["records_s"] == pytest.approx(10523.412011)
    assert (got["p50_ms"], got["p95_ms"], got["p99_ms"]) == (8, 27, 45)
    with pytest.raises(LabError, match="no summary line"):
        cb.parse_total("49981 records sent, 9994.2 records/sec (9.76 MB/sec), 1 ms avg "
                       "latency, 2 ms max latency.")


def test_rows_are_medians_and_ratios_per_client():
    runs = cb.SideBySide()
    for rep, (base, idem) in enumerate([(100, 99), (110, 100), (90, 101)]):
        runs.runs += [{"client": "java", "variant": "acks=all", "rep": rep, "records_s": base},
                      {"client": "java", "variant": "idempotent", "rep": rep,
                       "records_s": idem},
                      {"client": "librdkafka", "variant": "acks=all", "rep": rep,
                       "records_s": 2 * base},
                      {"client": "librdkafka", "variant": "idempotent", "rep": rep,
                       "records_s": base}]
    rows = {r["variant"]: r for r in runs.rows()}
    assert rows["idempotent"]["java ratio"] == pytest.approx(1.0)
    assert rows["idempotent"]["librdkafka ratio"] == pytest.approx(0.5)
    assert rows["acks=all, 5 in flight"]["java records/s"] is None  # not a Java variant
    assert runs.ratio("java", "idempotent") == pytest.approx(1.0)
    with pytest.raises(LabError):
        runs.ratio("java", "txn 1000ms")


def test_only_java_variants_run_with_java():
    only_rdkafka = next(v for v in cb.VARIANTS if v.java is None)
    with pytest.raises(LabError):
        cb.java_run("b", "t", only_rdkafka, 10, 100, 5, 1000)


def test_the_java_tool_metrics_are_read_by_name():
    out = ("60000 records sent, 35067.2 records/sec (34.25 MB/sec), 24.1 ms avg latency\n"
           "producer-metrics:batch-size-avg:{client-id=perf-producer-client} : 705004.534\n"
           "producer-metrics:records-per-request-avg:{client-id=perf-producer-client} : 681.818\n"
           "producer-metrics:record-error-rate:{client-id=perf-producer-client}       : NaN\n")
    got = cb.parse_metrics(out)
    assert got == {"batch-size-avg": 705004.534, "records-per-request-avg": 681.818}


def test_records_per_request_come_from_one_statistics_report():
    import json
    report = {"txmsgs": 9000, "brokers": {
        "b1": {"nodeid": 1, "req": {"Produce": 6, "Metadata": 2}},
        "b2": {"nodeid": 2, "req": {"Produce": 4}},
        "bootstrap": {"nodeid": -1, "req": {"Produce": 99}}}}
    assert cb.produce_requests_per([json.dumps(report)]) == 900
    assert cb.produce_requests_per([]) is None
    assert cb.produce_requests_per([json.dumps({"txmsgs": 0, "brokers": {}})]) is None
