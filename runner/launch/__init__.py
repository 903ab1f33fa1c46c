"""Workers through a cluster's own scheduler, sized to the queue: `python -m runner launch slurm [--watch]` submits
Slurm job arrays of `runner work --drain --idle-exit S` workers; `python -m runner launch kubernetes` renders (and
applies) an Indexed Job. The scheduler places them; the lab only asks how many, and records what the scheduler says:
config (the one file), sizing (how many), slurm and kubernetes (the schedulers' clients), launcher (the look, once or
watched), identity (a worker's place, seen from inside), cli (the command)."""
