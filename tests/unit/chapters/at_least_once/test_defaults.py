"""defaults: the Java table parser and the rows, on recorded dumps; and the
live librdkafka dump (no broker needed: a fresh configuration of the loaded library)."""

import pytest

from deliverylab.chapters.at_least_once import defaults as cd

JAVA_HTML = """
<li>
<h4><a id="enable.auto.commit"></a><a id="consumerconfigs_enable.auto.commit" href="#x">
enable.auto.commit</a></h4>
<p>If true the consumer's offset will be periodically committed in the background.</p>
<table><tbody>
<tr><th>Type:</th><td>boolean</td></tr>
<tr><th>Default:</th><td>true</td></tr>
</tbody></table>
</li>
<li>
<h4><a id="isolation.level"></a><a id="consumerconfigs_isolation.level" href="#y">
isolation.level</a></h4>
<table><tbody>
<tr><th>Default:</th><td>read_uncommitted</td></tr>
</tbody></table>
</li>
"""


def test_parse_config_html_reads_each_default():
    assert cd.parse_config_html(JAVA_HTML) == {"enable.auto.commit": "true",
                                               "isolation.level": "read_uncommitted"}


def _recorded():
    rd = {"version": "9.9.9", "request.required.acks": "-1", "enable.idempotence": "false",
          "enable.auto.commit": "true", "auto.commit.interval.ms": "5000",
          "enable.auto.offset.store": "true", "isolation.level": "read_committed",
          "auto.offset.reset": "largest"}
    java = {"client": {"version": "4.1.1"},
            "producer": {"acks": "all", "enable.idempotence": "true"},
            "consumer": {"enable.auto.commit": "true", "auto.commit.interval.ms": "5000",
                         "isolation.level": "read_uncommitted", "auto.offset.reset": "latest"}}
    return rd, java


def test_rows_put_both_clients_side_by_side():
    rd, java = _recorded()
    rows = {r["setting"]: r for r in cd.rows(rd, java)}
    assert rows["enable.idempotence"]["librdkafka 9.9.9"] == "false"
    assert rows["enable.idempotence"]["Java client 4.1.1"] == "true"
    assert rows["isolation.level"]["librdkafka 9.9.9"] == "read_committed"
    assert rows["acks"]["librdkafka 9.9.9"] == "all (-1)"
    assert rows["auto.offset.reset"]["librdkafka 9.9.9"] == "latest (largest)"
    # Java has no offset store: the row says what it does instead.
    assert rows["enable.auto.offset.store"]["Java client 4.1.1"] == cd.JAVA_HAS_NO


def test_rows_refuse_a_librdkafka_without_the_property():
    rd, java = _recorded()
    del rd["enable.auto.offset.store"]
    with pytest.raises(cd.DefaultsUnavailable, match="enable.auto.offset.store"):
        cd.rows(rd, java)


def test_the_loaded_librdkafka_reports_its_defaults():
    import confluent_kafka

    rd = cd.librdkafka_defaults()
    assert rd["version"] == confluent_kafka.libversion()[0]
    # The defaults the course's narrative relies on (librdkafka CONFIGURATION.md).
    assert rd["enable.idempotence"] == "false"
    assert rd["enable.auto.commit"] == "true"
    assert rd["enable.auto.offset.store"] == "true"
    assert rd["isolation.level"] == "read_committed"
    assert rd["auto.commit.interval.ms"] == "5000"
