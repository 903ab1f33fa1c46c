"""Compile Lab runner: the worker (runner.worker), the child it starts per job (runner.child), the CLI
(runner.cli, `python -m runner`), the model zoo and the cluster launcher. Never imports streamlit."""
