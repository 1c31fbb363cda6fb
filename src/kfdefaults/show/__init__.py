"""Step 5, show: a :class:`~kfdefaults.Resolved` profile -> text: YAML and JSON (:mod:`.output`), where each value
came from (:mod:`.explain`, :mod:`.explain_view`), what differs between two (:mod:`.diff`), and the JSON Schema
of a profile file (:mod:`.jsonschema`)."""
