# Produces messages and waits for every delivery report. Input (stdin,
# JSON): bootstrap, topic, timeout_seconds, messages (key or null, value;
# base64), and optionally properties (more librdkafka properties: SASL,
# TLS). Output (stdout, JSON): each message's partition and offset, in
# order; exits non-zero when one was not delivered.
import base64
import json
import sys

from confluent_kafka import Producer

request = json.load(sys.stdin)
producer = Producer(
    {
        "bootstrap.servers": request["bootstrap"],
        "acks": "all",
        "enable.idempotence": True,
        # Large enough for any message a test sends; librdkafka's default
        # (1000000) would refuse a 1 MB value with its overhead.
        "message.max.bytes": 256 << 20,
        "message.timeout.ms": int(request["timeout_seconds"] * 1000),
        # One record per batch: tansu's memory storage cannot fetch from an
        # offset inside a batch (see kafka.rs), which a consumer group that
        # commits per message does after every rebalance.
        "batch.num.messages": 1,
        **request.get("properties", {}),
    }
)
delivered = [None] * len(request["messages"])
failures = []


def report(index):
    def on_delivery(error, message):
        if error is not None:
            failures.append(f"message {index}: {error}")
        else:
            delivered[index] = {"partition": message.partition(), "offset": message.offset()}

    return on_delivery


for index, message in enumerate(request["messages"]):
    key = message["key"]
    while True:
        try:
            producer.produce(
                request["topic"],
                key=None if key is None else base64.b64decode(key),
                value=base64.b64decode(message["value"]),
                on_delivery=report(index),
            )
            break
        except BufferError:
            producer.poll(0.1)
left = producer.flush(request["timeout_seconds"])
if left:
    failures.append(f"{left} messages not delivered in {request['timeout_seconds']} s")
if failures:
    sys.exit("; ".join(failures))
json.dump(delivered, sys.stdout)
