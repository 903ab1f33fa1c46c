"""What a starting dashboard server does before it answers (dashboard/app.py's lifespan): import the pages' modules
and load the results table, so the first visitor after a restart waits no longer than the next. Failures are logged
and left to the pages."""
from __future__ import annotations

import importlib
import logging
import pkgutil
import time

LOG = logging.getLogger("compile_lab.dashboard")
# run by streamlit, not imported: app.py is the server, main.py draws the frame when imported, screens/ are the pages
SCRIPTS = {"dashboard.app", "dashboard.main", "dashboard.server.warmup"}


def modules() -> list[str]:
    """dashboard/'s modules, room by room: what the pages import (the pages themselves, screens/, are scripts, in a
    folder that is no package)."""
    import dashboard
    return [m.name for m in pkgutil.walk_packages(dashboard.__path__, "dashboard.")
            if not m.ispkg and m.name not in SCRIPTS]


def run() -> dict:
    """Import, then load the results table and write its snapshot if that load asked for one (pickling holds the
    GIL: done here, before the server answers, not while a first visitor's page draws), and read the database's
    spreads between processes. Returns what it did, for the log line and tests."""
    start = time.perf_counter()
    done = {"jobs": None, "error": None}
    try:
        for name in modules():
            importlib.import_module(name)
        from dashboard.state import resources
        store = resources.store()  # the one the pages use (st.cache_resource)
        if store.claim_warming():  # else a page got here first and loads it: frame() below waits for that
            store.warm()
            if store.saving is not None:
                store.saving.join()
        done["jobs"] = len(store.frame(page=False))
        # the spreads between processes every model's answer is widened by, read here: a first visit's
        # answer then comes from the answers kept on disk alone
        from dashboard.panels import answer_table
        answer_table.priors(store.version, store.engine)
    except Exception as e:  # a database that is down or damaged: the pages show it, with what to do
        done["error"] = f"{type(e).__name__}: {e}"
        LOG.warning("dashboard warm-up stopped: %s", done["error"])
    took = time.perf_counter() - start
    print(f"Compile Lab: warmed in {took:.2f} s ({done['jobs']:,} finished jobs loaded)" if done["error"] is None
          else f"Compile Lab: warm-up stopped after {took:.2f} s ({done['error']}); the pages will say what is wrong",
          flush=True)
    return done
