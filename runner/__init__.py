"""Compile Lab runner: the worker CLI (python -m runner), the worker and the child it starts per job. Imports lab/ and
db/ (the measuring child: lab/ only), never streamlit."""
