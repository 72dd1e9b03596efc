"""``python -m dlbench.formats '<job as JSON>'``: a conversion job run inside a framework's
environment (the RecordIO writer needs MXNet's); see :func:`dlbench.formats.jobs.run`."""
import json
import sys

from .jobs import execute

execute(json.loads(sys.argv[1]))
