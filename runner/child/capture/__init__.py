"""What the compiler did, captured in the child: metrics and graph breaks, recompiles, CUDA graphs' health, the
structured trace and tlparse's report, kernel counts, the roofline's work, peak memory."""
