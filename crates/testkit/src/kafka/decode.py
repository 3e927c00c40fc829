# Decodes each message as an ExportProfilesServiceRequest, from protobuf
# or OTLP/JSON, with opentelemetry-proto. Input (stdin, JSON): encoding
# ("proto" or "json"), values (base64). Output (stdout, JSON): per message,
# its profiles, samples, and the sum of the sample values per sample type
# (the dictionary's string for the profile's sample_type.type_strindex),
# or the error that stopped decoding it.
import base64
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import (
    ExportProfilesServiceRequest,
)

request = json.load(sys.stdin)


def parse(data):
    if request["encoding"] == "json":
        return json_format.Parse(data.decode("utf-8"), ExportProfilesServiceRequest())
    return ExportProfilesServiceRequest.FromString(data)


def summary(data):
    message = parse(data)
    strings = message.dictionary.string_table
    profiles = [
        profile
        for resource in message.resource_profiles
        for scope in resource.scope_profiles
        for profile in scope.profiles
    ]
    values_by_type = {}
    for profile in profiles:
        kind = strings[profile.sample_type.type_strindex]
        total = sum(value for sample in profile.samples for value in sample.values)
        values_by_type[kind] = values_by_type.get(kind, 0) + total
    return {
        "profiles": len(profiles),
        "samples": sum(len(profile.samples) for profile in profiles),
        "values_by_type": values_by_type,
    }


results = []
for value in request["values"]:
    try:
        results.append({"decoded": summary(base64.b64decode(value))})
    except Exception as error:  # Any failure is the answer for this message.
        results.append({"error": f"{type(error).__name__}: {error}"})
json.dump(results, sys.stdout)
