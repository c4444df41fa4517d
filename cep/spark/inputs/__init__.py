"""The input side of a micro-batch: the Python Data Source that plans a batch's offsets
from the input log (``source``), what its tasks are told (``config``), the tasks that read,
type, derive and route (``tasks``), and how far each input has been read
(``progress``). May import ``cep.spark.chains``.
"""
