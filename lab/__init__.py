"""Compile Lab's meaning, pure Python: the experiment spec and its swept axes, the result record, labels, noise
causes and follow-ups, the answer's statistics and verdicts, break-even, roofline maths and timelines. No
SQLAlchemy, no Streamlit, no torch: the measuring child, the worker, the CLI and the dashboard all read it."""
