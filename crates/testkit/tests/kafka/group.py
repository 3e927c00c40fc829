# Two confluent-kafka consumers in one consumer group read a topic to its
# end, committing every message synchronously after reading it; then a
# third member of the group, started after both left, reports the group's
# committed offsets. Input (stdin, JSON): bootstrap, topic, expected,
# timeout_seconds. Output (stdout, JSON): per member the partitions it was
# assigned and the (partition, offset) of what it read, and the committed
# offsets per partition.
import json
import sys
import time

from confluent_kafka import Consumer, TopicPartition

request = json.load(sys.stdin)
topic = request["topic"]
settings = {
    "bootstrap.servers": request["bootstrap"],
    "group.id": "profbridge-testkit-group",
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 500,
}
members = []
for name in ("first", "second"):
    member = {"name": name, "assigned": [], "read": []}

    def on_assign(consumer, partitions, member=member):
        member["assigned"].extend(p.partition for p in partitions)

    consumer = Consumer({**settings, "client.id": name})
    consumer.subscribe([topic], on_assign=on_assign)
    members.append((consumer, member))

deadline = time.monotonic() + request["timeout_seconds"]
read = 0
# Both must have joined before the first leaves: poll until every message
# was read and both hold partitions.
while time.monotonic() < deadline:
    for consumer, member in members:
        message = consumer.poll(0.1)
        if message is None:
            continue
        if message.error() is not None:
            print(f"{member['name']}: {message.error()}", file=sys.stderr)
            continue
        member["read"].append([message.partition(), message.offset()])
        consumer.commit(message=message, asynchronous=False)
        read += 1
    if read >= request["expected"] and all(m["assigned"] for _, m in members):
        break
for consumer, _ in members:
    consumer.close()

checker = Consumer({**settings, "client.id": "checker"})
metadata = checker.list_topics(topic, timeout=10)
partitions = [TopicPartition(topic, p) for p in metadata.topics[topic].partitions]
committed = {
    str(p.partition): p.offset for p in checker.committed(partitions, timeout=10)
}
checker.close()
json.dump({"members": [m for _, m in members], "committed": committed}, sys.stdout)
