"""The worker: claims jobs, holds their leases, runs each job's child as one `Attempt` (prepare, run the child, watch
it, record the outcome) and stores what it reports. Never imports torch."""
