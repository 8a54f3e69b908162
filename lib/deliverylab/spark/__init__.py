"""Spark: the Inspector (a SparkSession over the topics), the streaming pipeline of
chapter 05 (a query in a child driver, its sinks) and the crash scenes the matrix runs."""
