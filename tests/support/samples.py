"""Every example rule file and the sample input it runs on (relative to tests/data)."""

EXAMPLES = {
    "fsd.epl": "tweets_small.jsonl",
    "fsd_listing1.epl": "tweets_small.jsonl",
    "busy_topic.epl": "tweets_small.jsonl",
    "sensor_average.epl": "readings.jsonl",
    "delay_streak.epl": "flights.jsonl",
}

#: the examples without the Listing 1 spelling of fsd.epl (the same rule, same events)
DISTINCT_EXAMPLES = {rule: data for rule, data in EXAMPLES.items()
                     if rule != "fsd_listing1.epl"}
