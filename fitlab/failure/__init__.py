"""The blog's failure replayed with the evidence kept: versions, graph, anomaly trace, fixes."""
