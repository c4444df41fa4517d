"""How a command's failure reaches the user: exit statuses, and the errors that are
said in one line (``cep: …``) instead of a traceback."""

from __future__ import annotations

import sys

EXIT_RUN_ERROR = 1  # the run failed: unreadable input, MongoDB or Kafka gone, ...
EXIT_RULE_ERROR = 2  # a rule error or bad usage (argparse's own status too)
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT

#: The errors of the layers below that end a command with EXIT_RUN_ERROR, by module and
#: class name. Named, not imported, so that a command loads only what it uses: an error
#: whose module was never imported cannot have been raised.
RUN_FAILURES = (
    ("cep.io.inputs", "InputError"),
    ("cep.engine.udf.files", "UdfFileError"),
    ("cep.engine.udf.shipment", "UdfShipError"),
    ("cep.engine.udf_isolation", "UdfIsolationError"),
    ("cep.spark.run_dir", "SparkRunError"),
    ("cep.transports.mongo_client", "StoreError"),
    ("cep.servers.mongo", "EmbeddedMongoError"),
    ("cep.transports.address", "KafkaTransportError"),
    ("cep.servers.kafka", "EmbeddedKafkaError"),
    ("cep.ui.errors", "UiError"),
    ("cep.spark.cluster.cpu_quota", "CgroupError"),
    ("cep.spark.cluster.standalone", "ClusterStartError"),
)


class CommandError(Exception):
    """A command's own refusal (an option value it cannot use): EXIT_RUN_ERROR."""


def run_failures() -> tuple[type[Exception], ...]:
    """The error classes that end a command with EXIT_RUN_ERROR, of the modules loaded."""
    loaded = (getattr(sys.modules[module], name) for module, name in RUN_FAILURES
              if module in sys.modules)
    return (CommandError, *loaded)
