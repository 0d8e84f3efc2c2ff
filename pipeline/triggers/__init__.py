"""Event triggers: jobs started by records on any Kafka topic.

A trigger (:mod:`.model`) names a source topic, how its records read (:mod:`.decode`), a
filter over them (:mod:`.filter`) and the job each matching record submits
(:mod:`.template`). Triggers live on the compacted jobs.triggers topic (:mod:`.topic`);
the trigger processor (:mod:`.processor`) follows it, reads every source topic and
submits one job per matching record, in one Kafka transaction with its offsets, under an
id derived from (trigger, topic, partition, offset) (:mod:`.ids`): a replay submits
nothing twice. Decisions are pure (:mod:`.engine`); docs/triggers.md is the user's guide.
"""
