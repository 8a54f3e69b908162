"""After a passing grade: the lab's own loop and the note on how the student's differs,
read from hand-written sources and from the shipped correct solutions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from deliverylab.grade import EXERCISES, exercise
from deliverylab.grade.compare import differences, lab_loop, shape_of

STORE_OFFSETS = '''
CONSUMER_SETTINGS = {"enable.auto.commit": True, "enable.auto.offset.store": False}

def consume_loop(consumer, producer, output_topic, running):
    while running():
        msgs = consumer.consume(num_messages=10, timeout=0.5)
        for m in msgs:
            producer.produce(output_topic, m.value())
        producer.flush(30)
        consumer.store_offsets(msgs[-1])
'''
COMMIT = '''
CONSUMER_SETTINGS = {"enable.auto.commit": False}

def consume_loop(consumer, producer, output_topic, running):
    while running():
        msgs = consumer.consume(num_messages=10, timeout=0.5)
        for m in msgs:
            producer.produce(output_topic, m.value())
        try:
            producer.flush(30)
        except (KafkaException, RuntimeError):
            raise
        consumer.commit(asynchronous=False)
'''
HANDLER = '''
def handle(db, message_id, order, where, payments):
    db.execute("begin  immediate")
    if db.execute("SELECT 1 FROM processed WHERE id = ?", (message_id,)).fetchone():
        db.execute("COMMIT")
        return
    db.execute("""INSERT INTO processed (id) VALUES (?)
                  ON CONFLICT DO NOTHING""", (message_id,))
    payments.pay(order, key=message_id)
    db.execute("COMMIT")
'''


def test_a_solutions_shape_is_its_settings_calls_catches_and_sql():
    s = shape_of(COMMIT)
    assert s.settings == {"enable.auto.commit": False}
    assert s.calls == {"consume", "produce", "flush", "commit"}
    assert s.catches == {"KafkaException", "RuntimeError"}
    h = shape_of(HANDLER)
    # A statement's verb and the words that change what a repeat does; a string that
    # only starts like a verb is no statement.
    assert h.sql == {"BEGIN IMMEDIATE", "SELECT", "INSERT ON CONFLICT", "COMMIT"}
    assert h.calls == {"execute", "pay"} and h.with_block is False
    assert shape_of("x = 'Selected: 3'\nwith db:\n    pass\n").sql == set()
    # Only what an execute-like call runs: a docstring or a message that begins like a
    # statement is none; a statement kept in a name, or an f-string's text, is one.
    named = ('"""Begin a batch: select its rows."""\nUPSERT = "INSERT OR IGNORE INTO t"\n'
             'def f(db, t):\n    print("Commit done")\n    db.execute(UPSERT)\n'
             '    db.executemany(f"REPLACE INTO {t} VALUES (?)", [])\n')
    assert shape_of(named).sql == {"INSERT OR IGNORE", "REPLACE"}


def test_the_note_names_each_difference_from_both_sides():
    found = differences(shape_of(STORE_OFFSETS), shape_of(COMMIT))
    assert found == [
        "setting enable.auto.commit: yours True, ours False",
        "setting enable.auto.offset.store: yours False, ours not set (the lab's)",
        "ours calls commit(), which commits offsets or a database transaction; yours "
        "does not",
        "yours calls store_offsets(), which stores offsets for auto-commit to commit; "
        "ours does not",
        "ours catches KafkaException; yours does not",
        "ours catches RuntimeError; yours does not",
    ]
    assert differences(shape_of(COMMIT), shape_of(COMMIT)) == []


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine.py"
    path.write_text(text)
    return path


def test_after_a_pass_the_reference_is_shown_with_what_yours_does_differently(tmp_path):
    ex = exercise("02")
    text = lab_loop(ex, write(tmp_path, STORE_OFFSETS))
    assert text.startswith("Every cell passed. The lab's own consume_loop() "
                           "(solutions/02_consume_loop/reference.py)")
    assert ex.reference.read_text().rstrip() in text  # the whole file, as it is
    assert "yours calls store_offsets()" in text and "a note, not a verdict" in text
    # The reference itself, graded: nothing to compare.
    assert "(the file you graded is this one)" in lab_loop(ex, ex.reference)
    # Same calls and settings, arranged otherwise: said so, not left blank.
    same = lab_loop(ex, write(tmp_path, ex.reference.read_text() + "\n# mine\n"))
    assert "the same settings and calls as ours" in same


def test_without_solutions_the_note_says_where_the_reference_lives(tmp_path):
    ex = replace(exercise("04"), name="not_shipped")
    assert not ex.reference.exists()
    text = lab_loop(ex, write(tmp_path, COMMIT))
    assert "solutions/04_not_shipped/reference.py in the course's repository" in text


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_every_shipped_solution_reads_and_each_correct_one_is_shown_the_reference(exercise_id):
    ex = EXERCISES[exercise_id]
    ours = shape_of(ex.reference.read_text())
    assert ours.calls, f"no delivery call read from {ex.reference}"
    for path in [*ex.correct().values(), *ex.wrong().values()]:
        shape_of(path.read_text())  # every file the grader ships reads
    for what, path in ex.correct().items():
        if what != "reference":
            assert ex.reference.read_text().rstrip() in lab_loop(ex, path), what


class _Cluster:
    bootstrap_servers = "127.0.0.1:1"


def _graded(monkeypatch, verdict: bool) -> None:
    from deliverylab.grade import runner

    def run_once(ex, path, fault, seed, cluster, point):
        return runner.Run(ex.id, fault, seed, {}, {p.name: verdict for p in ex.properties},
                          point=point.name if point else "")

    monkeypatch.setattr(runner, "run_once", run_once)


@pytest.mark.parametrize("verdict", [True, False])
def test_a_whole_grade_shows_the_lab_loop_only_when_it_passed(monkeypatch, capsys, tmp_path,
                                                              verdict):
    from deliverylab.grade import grade

    _graded(monkeypatch, verdict)
    mine = write(tmp_path, STORE_OFFSETS)
    report = grade("02", mine, cluster=_Cluster())
    assert report.ok is verdict
    shown = capsys.readouterr().out
    assert ("Every cell passed. The lab's own consume_loop()" in shown) is verdict
    # A narrowed grade (one fault) is no whole pass: the reference stays hidden.
    grade("02", mine, cluster=_Cluster(), faults=[exercise("02").faults[0]])
    assert "The lab's own" not in capsys.readouterr().out
