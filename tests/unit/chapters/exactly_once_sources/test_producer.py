"""producer (07): the task producer's effective settings, from hand-written worker logs."""

import pytest

from deliverylab.chapters.exactly_once_sources.producer import (
    producer_configs,
    task_producer_config,
)
from deliverylab.errors import LabError

LOG = (
    "[10:00:00,000] INFO ProducerConfig values: \n"
    "\tacks = -1\n"
    "\tclient.id = connector-producer-other-0\n"
    "\tenable.idempotence = false\n"
    "[10:00:00,100] INFO something else (Worker)\n"
    "[10:00:01,000] INFO ProducerConfig values: \n"
    "\tacks = -1\n"
    "\tclient.id = connector-producer-lines-0\n"
    "\tenable.idempotence = true\n"
    "\tmax.in.flight.requests.per.connection = 1\n"
    "\ttransactional.id = null\n"
    "\tsasl.jaas.config = \n"
    "[10:00:01,200] INFO The configuration 'x' was supplied but isn't a known config.\n"
)


def test_blocks_end_at_the_first_line_that_is_not_a_setting():
    blocks = producer_configs(LOG)
    assert [b["client.id"] for b in blocks] == ["connector-producer-other-0",
                                               "connector-producer-lines-0"]
    assert blocks[1]["sasl.jaas.config"] == "" and "x" not in blocks[1]


def test_the_task_producer_is_found_by_its_client_id(tmp_path):
    (tmp_path / "w0.log").write_text("nothing here\n")
    (tmp_path / "w1.log").write_text(LOG)
    conf = task_producer_config([tmp_path / "w0.log", tmp_path / "w1.log"], "lines")
    assert conf["enable.idempotence"] == "true"
    assert conf["max.in.flight.requests.per.connection"] == "1"
    with pytest.raises(LabError, match="connector-producer-missing-0"):
        task_producer_config([tmp_path / "w1.log"], "missing")
