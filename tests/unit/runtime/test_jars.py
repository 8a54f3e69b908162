"""The committed pins: complete-looking, consistent with the code, and refused when wrong.

Whether the pins are *really* complete (every class a broker loads) is proven by
``tests/integration/runtime/test_jars.py``, which starts a broker from a cache filled only
from them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deliverylab.errors import BadValue, JarsUnavailable
from deliverylab.runtime import classpaths, jars


def names(component: str) -> set[str]:
    return {j.name for j in jars.pinned(component)}


def test_every_component_is_pinned_with_sha256_and_size():
    lock = jars.load_lock()
    assert set(lock["components"]) == set(jars.COMPONENTS)
    assert lock["repository"] == jars.CENTRAL
    for name, comp in jars.COMPONENTS.items():
        entry = lock["components"][name]
        assert entry["roots"] == list(comp.roots) and entry["dir"] == comp.dir
        for jar in jars.pinned(name):
            assert re.fullmatch(r"[0-9a-f]{64}", jar.sha256), jar
            assert jar.size > 0 and jar.path.endswith("/" + jar.name)
            group, artifact, version = jar.coord.split(":")[:3]
            assert jar.path.startswith(f"{group.replace('.', '/')}/{artifact}/{version}/")


def test_broker_pins_hold_what_the_ivy_fallback_once_missed():
    # The libraries whose absence killed `kafka-storage format` on a Maven-less laptop.
    for jar in ("scala-logging_2.13-3.9.5.jar", "HdrHistogram-2.2.2.jar",
                "jackson-datatype-jdk8-2.19.0.jar", "snakeyaml-2.4.jar",
                "snappy-java-1.1.10.7.jar", f"kafka-raft-{jars.KAFKA_VERSION}.jar",
                f"kafka_2.13-{jars.KAFKA_VERSION}.jar", f"log4j-core-{jars.LOG4J_VERSION}.jar"):
        assert jar in names("kafka")


def test_each_component_pins_its_roots():
    assert f"spark-sql-kafka-0-10_2.13-{jars.SPARK_VERSION}.jar" in names("spark-kafka")
    assert f"kafka-tools-{jars.KAFKA_VERSION}.jar" in names("tools")
    assert f"connect-runtime-{jars.KAFKA_VERSION}.jar" in names("tools")  # tools need it
    assert f"connect-file-{jars.KAFKA_VERSION}.jar" in names("connect")
    assert f"sqlite-jdbc-{jars.SQLITE_JDBC_VERSION}.jar" in names("jdbc")
    assert f"postgresql-{jars.POSTGRESQL_JDBC_VERSION}.jar" in names("jdbc")


def test_extensions_add_no_second_copy_of_a_base_library():
    """A library twice on one classpath (two versions) is what the lock refuses."""
    for comp in jars.COMPONENTS:
        seen: dict[str, str] = {}
        for part in jars.with_bases(comp):
            for jar in jars.pinned(part):
                artifact = jars._artifact(jar.name)
                assert artifact not in seen, f"{comp}: {jar.name} and {seen[artifact]}"
                seen[artifact] = jar.name


def test_the_connector_leaves_out_what_pyspark_ships():
    import pyspark

    shipped = {jars._artifact(j.name)
               for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    assert not {jars._artifact(n) for n in names("spark-kafka")} & shipped


def test_classpath_lists_bases_first():
    assert jars.with_bases("connect") == ["kafka", "tools", "connect"]
    assert jars.with_bases("jdbc") == ["jdbc"]


def test_empty_cache_without_fetch_names_files_and_fixes(tmp_path, monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_CACHE", str(tmp_path))
    with pytest.raises(JarsUnavailable) as err:
        classpaths.kafka_libs(fetch=False)
    text = str(err.value)
    assert f"the Kafka {jars.KAFKA_VERSION} broker jars in {tmp_path}" in text
    assert "(missing)" in text and "and 43 more" in text
    assert "make setup BUNDLE=<folder>" in text and "\n" not in text


def test_an_unpinned_kafka_version_is_refused():
    with pytest.raises(BadValue, match="kafka_version='0.0.0' is not accepted; expected "
                                       f"{jars.KAFKA_VERSION} \\(the pinned one\\)"):
        classpaths.kafka_libs("0.0.0")


def test_kafka_home_without_jars_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_HOME", str(tmp_path))
    with pytest.raises(JarsUnavailable, match="has no libs/kafka_\\*.jar"):
        classpaths.kafka_libs()


def test_unknown_component_is_named():
    with pytest.raises(BadValue, match="component='kafka-ui' is not accepted"):
        jars.component_dir("kafka-ui")


def test_lock_without_maven_says_students_never_need_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(Exception, match="needs Maven \\(mvn\\) on PATH; students never"):
        jars.lock(["jdbc"], path=tmp_path / "lock.json")
    assert not (tmp_path / "lock.json").exists()
