#!/bin/sh
# Written by deliverylab.cluster.docker: format the storage once, then run the broker.
set -eu
CONF="${DELIVERYLAB_CONF:-/etc/deliverylab}"
PROPS="${DELIVERYLAB_PROPERTIES:-$CONF/server.properties}"
DATA="$(sed -n 's/^log\.dirs=//p' "$PROPS")"
CP="/opt/kafka/libs/*"
LOG4J="-Dlog4j2.configurationFile=$CONF/log4j2.properties"
CDS=""  # the lab's image records a class archive at build time; apache/kafka has none
[ -f /opt/kafka/broker.jsa ] && CDS="-XX:SharedArchiveFile=/opt/kafka/broker.jsa"
if [ ! -f "$DATA/meta.properties" ]; then
    java ${DELIVERYLAB_TOOL_OPTS:-} $CDS "$LOG4J" -cp "$CP" kafka.tools.StorageTool format \
        -t "$(cat "$CONF/cluster.id")" -c "$PROPS" --ignore-formatted
fi
exec java ${DELIVERYLAB_BROKER_OPTS:-} $CDS "$LOG4J" -cp "$CP" kafka.Kafka "$PROPS"
