"""Benchmark suites (SOL-ExecBench, cann-bench): importers, suites, the bench runner, leaderboards
and exporters. See benchmark-formats.md for the formats and scores these follow."""
