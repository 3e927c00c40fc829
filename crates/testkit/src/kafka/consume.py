# Reads a topic from its earliest offsets, every partition assigned (no
# consumer group), until the expected number of messages arrived or the
# timeout passed. Input (stdin, JSON): bootstrap, topic, expected,
# timeout_seconds, and optionally properties (more librdkafka properties:
# SASL, TLS). Output (stdout, JSON): the messages in arrival order, bytes
# base64-encoded.
import base64
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, TopicPartition

request = json.load(sys.stdin)
consumer = Consumer(
    {
        "bootstrap.servers": request["bootstrap"],
        "group.id": "profbridge-testkit-reader",
        "enable.auto.commit": False,
        "fetch.max.bytes": 256 << 20,
        "max.partition.fetch.bytes": 256 << 20,
        "receive.message.max.bytes": 512 << 20,
        **request.get("properties", {}),
    }
)
topic = request["topic"]
metadata = consumer.list_topics(topic, timeout=request["timeout_seconds"])
found = metadata.topics.get(topic)
if found is None or found.error is not None:
    sys.exit(f"topic {topic}: {found.error if found else 'not in the metadata'}")
consumer.assign(
    [TopicPartition(topic, partition, -2) for partition in found.partitions]
)


def encoded(data):
    return None if data is None else base64.b64encode(data).decode()


messages = []
deadline = time.monotonic() + request["timeout_seconds"]
while len(messages) < request["expected"] and time.monotonic() < deadline:
    message = consumer.poll(min(0.5, max(0.0, deadline - time.monotonic())))
    if message is None:
        continue
    if message.error() is not None:
        if message.error().fatal():
            sys.exit(f"consumer: {message.error()}")
        print(f"consumer (carrying on): {message.error()}", file=sys.stderr)
        continue
    messages.append(
        {
            "partition": message.partition(),
            "offset": message.offset(),
            "key": encoded(message.key()),
            "value": encoded(message.value() or b""),
            "headers": [[name, encoded(value)] for name, value in message.headers() or []],
        }
    )
consumer.close()
json.dump(messages, sys.stdout)
