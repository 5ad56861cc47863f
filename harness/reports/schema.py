"""The JSON Schema of ``results.json`` (results@2), derived from the result model and shipped.

``results.schema.json`` beside this module is the published copy; a test keeps it equal to
:func:`results_json_schema`, so the model and the document cannot drift apart. A field an event
says in the engine's words (``verdict: Promise``) lists the words the document publishes
(:mod:`harness.domain.published`).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from harness.domain.published import published_fields
from harness.reports.model import EVENT_TYPES, SCHEMA, Results

SCHEMA_ID = "https://failover-harness.dev/schemas/results-2.json"


def results_json_schema() -> dict[str, Any]:
    """Draft 2020-12 schema of ``Results.to_json()``: each event is tagged by its ``type``."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(Results).json_schema(ref_template="#/$defs/{model}")
    defs = schema.setdefault("$defs", {})
    for cls in EVENT_TYPES:
        definition = defs[cls.__name__]
        definition["properties"] = {"type": {"const": cls.TYPE}, **definition["properties"]}
        definition["required"] = ["type", *definition.get("required", [])]
        definition["additionalProperties"] = False
    for cls, name, words in published_fields(Results):  # an event's words as published
        prop = defs[cls.__name__]["properties"][name]
        if "enum" in prop:
            prop["enum"] = words
    schema["properties"]["events"] = {
        "type": "array",
        "items": {"oneOf": [{"$ref": f"#/$defs/{cls.__name__}"} for cls in EVENT_TYPES]},
    }
    schema["properties"] = {"schema": {"const": SCHEMA}, **schema["properties"]}
    schema["required"] = ["schema", *schema.get("required", [])]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "failover-harness results.json (version 2)",
        **schema,
    }


@cache
def shipped_schema() -> dict[str, Any]:
    text = resources.files("harness.reports").joinpath("results.schema.json").read_text("utf-8")
    return json.loads(text)


def validate_results(document: Any) -> None:
    """Raise ``jsonschema.ValidationError`` if ``document`` is not a valid results.json."""
    import jsonschema

    jsonschema.validate(document, shipped_schema(), cls=jsonschema.Draft202012Validator)


if __name__ == "__main__":  # regenerate: python -m harness.reports.schema > results.schema.json
    print(json.dumps(results_json_schema(), indent=2))
