"""The child: one process per job, which builds the model, measures it by the timing protocol, checks accuracy,
captures what the compiler did and writes one result record (`python -m runner.child`). Imports lab/, never db/.
Its process plumbing (reaper, lease_deadline, diskspace, preload, zygote) is stdlib-only until torch is wanted, so
the worker may import those modules without torch."""
