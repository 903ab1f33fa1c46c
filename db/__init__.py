"""Compile Lab's storage: SQLAlchemy models, the engine, migrations, queue operations and the queries the CLI and the
pages read (views, results, reports). The lab's meaning is lab/'s; no torch, no streamlit here."""
