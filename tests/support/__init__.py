"""Helpers the tests share: imported as ``support.<module>`` (``tests`` is on pytest's
``pythonpath``), never from one test module into another."""
