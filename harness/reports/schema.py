"""The JSON Schema of ``results.json``, derived from the result model (and shipped as a file).

``results.schema.json`` beside this module is the published copy; a test keeps it equal to
:func:`results_json_schema`, so the model and the document cannot drift apart.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from harness.reports.model import SCHEMA, RunReport


def results_json_schema() -> dict[str, Any]:
    """Draft 2020-12 schema of ``RunReport.to_json()``."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(RunReport).json_schema()
    schema["properties"] = {"schema": {"const": SCHEMA}, **schema["properties"]}
    schema["required"] = ["schema", *schema.get("required", [])]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://failover-harness.dev/schemas/results-1.json",
        "title": "failover-harness results.json (version 1)",
        **schema,
    }


@cache
def shipped_schema() -> dict[str, Any]:
    text = resources.files("harness.reports").joinpath("results.schema.json").read_text("utf-8")
    return json.loads(text)


def validate_results(document: Any) -> None:
    """Raise ``jsonschema.ValidationError`` if ``document`` is not a valid results.json."""
    import jsonschema

    jsonschema.validate(document, shipped_schema(),
                        cls=jsonschema.Draft202012Validator)


if __name__ == "__main__":  # regenerate: python -m harness.reports.schema > results.schema.json
    print(json.dumps(results_json_schema(), indent=2))
