"""A writer process for the kill -9 tests (run as a script, not collected by pytest).

``python kafka_writer_child.py BOOTSTRAP TOPIC RUN BATCH N MODE [WRITER]``: writes WRITER's
(default 0) part of batch BATCH, N records (``b"<batch>-<i>"`` keyed ``b"k<i % 5>"``).
MODE ``mid`` sends the first half, prints ``sent`` and waits (the parent kills it
mid-transaction); ``after`` writes the whole batch, prints ``committed`` and waits
(killed after the commit).
"""

from __future__ import annotations

import sys
import time

from cep.transports.kafka_write import TransactionalBatchWriter


def records(batch: int, n: int) -> list[tuple[bytes, bytes]]:
    return [(b"k%d" % (i % 5), b"%d-%d" % (batch, i)) for i in range(n)]


def main() -> None:
    bootstrap, topic, run_id, batch_text, n_text, mode = sys.argv[1:7]
    batch, n = int(batch_text), int(n_text)
    writer_id = int(sys.argv[7]) if len(sys.argv) > 7 else 0
    writer = TransactionalBatchWriter(bootstrap, topic, run_id, writer_id)
    if mode == "mid":
        assert writer.begin(batch)
        writer.send(records(batch, n)[: n // 2])
        print("sent", flush=True)
    else:
        writer.write(batch, records(batch, n))
        print("committed", flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main()
