"""Compile Lab database layer: spec, models, engine, queue and result queries. No torch, no streamlit."""
