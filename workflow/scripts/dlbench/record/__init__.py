"""A run's record (``workflow/schemas/run_record.schema.yaml``; its changes in CHANGELOG.md), in three rooms:
:mod:`.build`, what the monitor builds from the runner's result, its samples and the node; :mod:`.provenance`, the
code's version and the node's facts it names; :mod:`.io`, how a record is written, read back (checked, of an older
schema upgraded to today's) and where its series lie."""
