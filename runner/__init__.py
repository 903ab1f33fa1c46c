"""Compile Lab runner: the worker CLI (python -m runner). Imports db/, never streamlit."""
