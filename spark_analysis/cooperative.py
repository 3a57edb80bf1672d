"""revoke-before-assign for a cooperative overlap between two members of one generation.

The checker (``Checker._judge``) names revoke-before-assign beside single-owner when a cooperative
member was assigned a partition in generation g while its owner, also at generation g then, still
held it and let go of it some other way than a revoke in g (that case is :func:`~spark_analysis.
invariants.overlap_findings`' own). Kafka refuses such an assignment: a member of generation g
reported what it owned when it joined, and with the cooperative protocol an owned partition may not
go to another member in the same generation -- the assignor first takes it away, and gives it out
in the next rebalance (KIP-429; kafka-clients 4.1.1 ``ConsumerCoordinator.validateCooperativeAssignment``
throws "Assignor supporting the COOPERATIVE protocol violates its requirements"). An owner that was
not at generation g (a zombie, a static member left out) did not report the partition to that
assignor: that overlap is single-owner's alone.

The owner's generation when the new owner got the partition is read from its rows before that
moment (its generation after its last such row that set one or started an incarnation), joined to
the few overlaps it can decide inside the group partitions (no exchange, no broadcast).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_analysis.invariants import VIOLATION, _label, _tp, ended_text, finding
from spark_analysis.ownership import STARTUP


def same_generation_overlaps(ov: DataFrame, rows: DataFrame) -> DataFrame:
    """Findings of revoke-before-assign from :func:`~spark_analysis.invariants.judged_overlaps`' overlaps (``ov``)
    and the member rows."""
    end = F.col("end")
    revoked_in_g = (end["kind"] == "revoked") & end["gen"].isNotNull() & (end["gen"] == F.col("new_gen"))
    cand = ov.filter(F.col("coop") & F.col("new_gen").isNotNull() & ~F.col("zombie") & ~F.col("tolerated")
                     & ~revoked_in_g)
    # the rows that set gen_ff: a generation named, or carried into a moved member's new group, or a startup
    gens = rows.filter(F.col("generation").isNotNull() | F.col("moved_generation").isNotNull()
                       | (F.col("name") == STARTUP)).select(
        F.col("group").alias("g_group"), F.col("member").alias("g_member"),
        F.struct(F.col("seq").alias("seq"), F.col("part").alias("part"), F.col("gen_ff").alias("gen")).alias("g"))
    key = ["group", "topic", "partition", "old", "new", "start_seq"]
    at_start = (gens.join(cand, (F.col("g_group") == F.col("group")) & (F.col("g_member") == F.col("old"))
                          & (F.col("g.seq") < F.col("start_seq")), "inner")
                .groupBy(*key, "start", "new_where", "new_gen", "end").agg(F.max("g").alias("old_at_start")))
    same = at_start.filter(F.col("old_at_start.gen") == F.col("new_gen"))
    return same.select(*finding(
        "revoke-before-assign", VIOLATION, F.array(F.col("old"), F.col("new")), F.array(_tp()), F.col("start"),
        F.greatest(F.col("start"), end["ts"]), F.array(F.col("new_where"), end["where"]),
        F.format_string("%s was assigned to %s before %s %s; a cooperative group assigns a moving partition only "
                        "after its owner revoked it (KIP-429)", _label(), F.col("new"), F.col("old"),
                        ended_text(end))))
